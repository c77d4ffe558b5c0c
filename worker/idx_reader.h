// Readers for the IDX format of (Fashion-)MNIST, gzip-compressed or plain.
//
// IDX: a big-endian header (two zero bytes, a type byte, a dimension count
// byte, then one uint32 per dimension) followed by the values. Only the
// unsigned-byte type (0x08) is supported, which is what MNIST and
// Fashion-MNIST use: images are 3-D (count x rows x cols), labels 1-D.
// Files are read with zlib's gzopen/gzread, which also reads uncompressed
// files transparently.
//
// Errors name the file and the problem: NOT_FOUND for a missing file;
// INVALID_ARGUMENT for a bad magic number, an unexpected type or dimension
// count, a truncated body, trailing bytes after the declared values, a
// corrupt gzip stream, or image and label files that disagree in count.
#ifndef PS_WORKER_IDX_READER_H_
#define PS_WORKER_IDX_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/dataset.h"

namespace ps::worker {

struct IdxHeader {
  uint8_t type = 0;             // 0x08 = unsigned byte
  std::vector<uint32_t> dims;   // e.g. {60000, 28, 28}
};

// Reads only the header of `path`.
absl::StatusOr<IdxHeader> ReadIdxHeader(const std::string& path);

// Reads an IDX file of `expected_dims` dimensions of unsigned bytes.
struct IdxBytes {
  IdxHeader header;
  std::vector<uint8_t> values;  // product of dims
};
absl::StatusOr<IdxBytes> ReadIdxBytes(const std::string& path,
                                      int expected_dims);

// Reads an image file (3-D) and a label file (1-D) into a Dataset with
// pixels scaled to [0, 1] (value / 255) and num_classes = max label + 1.
absl::StatusOr<Dataset> ReadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path);

}  // namespace ps::worker

#endif  // PS_WORKER_IDX_READER_H_
