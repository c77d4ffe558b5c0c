// The embedding export file (".psemb"): every row of one sparse table as
// exported from a running cluster (`ps_ctl export`, deploy/ctl/README.md),
// written and read here; the Python reader is ps_client.embedding_file.
//
// Format version 1, little-endian:
//   offset  size  field
//   0       8     magic "PSEMBED\0"
//   8       4     u32 format version (1)
//   12      4     u32 header size in bytes (256): the first record's offset
//   16      8     u64 number of rows n
//   24      4     u32 dim
//   28      4     u32 element type of the values (0 float32, 1 float16,
//                 2 bfloat16: the table's storage_type, so values are
//                 exactly what the servers stored)
//   32      4     u32 optimizer state slots per row s (0: exported without
//                 state)
//   36      4     u32 number of shards the rows came from
//   40      4     u32 CRC-32 (zlib's, as Python's zlib.crc32) of the
//                 records
//   44      4     u32 0
//   48      128   table name, UTF-8, NUL-padded
//   176     32    optimizer name (common/optimizers; its state slots in
//                 the registry's order: e.g. adam m, v), NUL-padded
//   208     48    zero
//   256     n records of 8 + dim * bytes(type) + s * dim * 4 bytes:
//                 u64 id | dim values | s blocks of dim float32 state
// Rows are in shard order, each shard's in its store order (not sorted).
// An export taken while training runs may list an id twice (evicted and
// re-created between two chunks): the later record is the newer.
//
// Thread safety: a writer is used by one thread; the reader is a function.
#ifndef PS_CLIENT_EXPORT_EMBEDDING_FILE_H_
#define PS_CLIENT_EXPORT_EMBEDDING_FILE_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/value_type.h"

namespace ps {

inline constexpr char kEmbeddingFileMagic[8] = {'P', 'S', 'E', 'M',
                                                'B', 'E', 'D', '\0'};
inline constexpr uint32_t kEmbeddingFileVersion = 1;
inline constexpr uint32_t kEmbeddingHeaderBytes = 256;
inline constexpr size_t kEmbeddingTableNameBytes = 128;
inline constexpr size_t kEmbeddingOptimizerNameBytes = 32;

struct EmbeddingFileHeader {
  uint64_t num_rows = 0;
  uint32_t dim = 0;
  ValueType value_type = ValueType::kFloat32;
  uint32_t num_state_slots = 0;
  uint32_t num_shards = 0;
  uint32_t crc32 = 0;
  std::string table;
  std::string optimizer;

  // Bytes of one record.
  uint64_t RecordBytes() const;
};

class EmbeddingFileWriter {
 public:
  // Starts `path` (written as "<path>.tmp" until Finish). `header`'s
  // num_rows and crc32 are filled in by Finish. INVALID_ARGUMENT for a dim
  // of 0 or names that do not fit; INTERNAL (path, errno text) on I/O.
  static absl::StatusOr<std::unique_ptr<EmbeddingFileWriter>> Create(
      const std::string& path, const EmbeddingFileHeader& header);
  // Removes the temporary file unless Finish succeeded.
  ~EmbeddingFileWriter();

  EmbeddingFileWriter(const EmbeddingFileWriter&) = delete;
  EmbeddingFileWriter& operator=(const EmbeddingFileWriter&) = delete;

  // Appends ids.size() rows: `values` holds ids.size() x dim float32 (encoded
  // to the header's type), `state` num_state_slots blocks of ids.size() x
  // dim (empty without state). INVALID_ARGUMENT on a size mismatch.
  absl::Status Append(absl::Span<const uint64_t> ids,
                      absl::Span<const float> values,
                      absl::Span<const float> state);

  // Writes the row count and checksum, fsyncs, and renames the file into
  // place. Returns the final header.
  absl::StatusOr<EmbeddingFileHeader> Finish();

 private:
  EmbeddingFileWriter(std::string path, EmbeddingFileHeader header,
                      std::FILE* file);
  absl::Status Write(const void* data, size_t n);

  const std::string path_;
  const std::string tmp_path_;
  EmbeddingFileHeader header_;
  std::FILE* file_;
  std::string record_;  // scratch
  bool finished_ = false;
};

// A whole file in memory, values and state as float32.
struct EmbeddingTable {
  EmbeddingFileHeader header;
  std::vector<uint64_t> ids;
  std::vector<float> values;               // num_rows x dim
  std::vector<std::vector<float>> state;   // per slot, num_rows x dim
};

// Reads and verifies a file: NOT_FOUND when it cannot be opened; DATA_LOSS
// "<path>: <problem>" for a wrong magic, an unknown version or element
// type, a size that does not match the row count (truncated), or a CRC
// mismatch.
absl::StatusOr<EmbeddingTable> ReadEmbeddingFile(const std::string& path);

}  // namespace ps

#endif  // PS_CLIENT_EXPORT_EMBEDDING_FILE_H_
