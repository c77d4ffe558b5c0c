// Process-wide settings for processes on the data path (servers, trainers).
// Call once from main() before other threads start.
#ifndef PS_COMMON_PROCESS_TUNING_H_
#define PS_COMMON_PROCESS_TUNING_H_

namespace ps {

// For a process that moves multi-MiB messages (a server, or a trainer using
// the client SDK): glibc malloc serves buffers up to 32 MiB from its heaps and
// keeps up to 256 MiB of freed memory instead of mmap()ing and unmapping every
// message-sized buffer, which costs a page fault per 4 KiB on each use
// (measured: about half the CPU per byte of a 16 MiB push;
// tests/bench/TRANSPORT_RESULTS.md). Returns false if glibc refused a
// setting (the process still works, only slower).
bool TuneAllocatorForLargeMessages();

// Turns off absl::Mutex's debug deadlock detection. Debian builds Abseil
// without NDEBUG, so by default every Mutex acquisition also updates a
// process-wide lock graph (GraphCycles under a global lock); a release build
// of Abseil has it off. Measured: 4 KiB request p50 -9%, CPU per op -5-10%
// (tests/bench/TRANSPORT_RESULTS.md, round 4). Lock-order bugs are still
// caught where it matters: the test binaries leave it on, and the clang
// build checks the annotations (-Wthread-safety).
void DisableMutexDeadlockDetection();

}  // namespace ps

#endif  // PS_COMMON_PROCESS_TUNING_H_
