// Process-wide allocator setting for processes that move multi-MiB messages.
#ifndef PS_COMMON_ALLOCATOR_TUNING_H_
#define PS_COMMON_ALLOCATOR_TUNING_H_

namespace ps {

// For a process that moves multi-MiB messages (a server, or a trainer using
// the client SDK): glibc malloc serves buffers up to 32 MiB from its heaps and
// keeps up to 256 MiB of freed memory instead of mmap()ing and unmapping every
// message-sized buffer, which costs a page fault per 4 KiB on each use
// (measured: about half the CPU per byte of a 16 MiB push;
// tests/bench/TRANSPORT_RESULTS.md). Call once from main() before other
// threads start. Returns false if glibc refused a setting (the process still
// works, only slower).
bool TuneAllocatorForLargeMessages();

}  // namespace ps

#endif  // PS_COMMON_ALLOCATOR_TUNING_H_
