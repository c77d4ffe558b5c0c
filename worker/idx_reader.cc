#include "worker/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace ps::worker {
namespace {

constexpr uint8_t kTypeUnsignedByte = 0x08;

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

absl::StatusOr<GzFile> Open(const std::string& path) {
  errno = 0;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    const int err = errno;
    const std::string message =
        absl::StrCat(path, ": cannot open: ",
                     err != 0 ? std::strerror(err) : "out of memory");
    if (err == ENOENT) return absl::NotFoundError(message);
    return absl::InvalidArgumentError(message);
  }
  gzbuffer(f, 1 << 20);
  return GzFile(f);
}

// Reads exactly `n` bytes; `what` describes them for the error message.
absl::Status ReadExactly(gzFile f, const std::string& path, void* out,
                         size_t n, const std::string& what) {
  char* p = static_cast<char*>(out);
  size_t done = 0;
  while (done < n) {
    const unsigned chunk =
        static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(f, p + done, chunk);
    if (got < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": corrupt file while reading ", what, ": ",
                       msg != nullptr ? msg : "read error"));
    }
    if (got == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": truncated: ", what, " needs ", n,
                       " bytes but the file ends after ", done));
    }
    done += static_cast<size_t>(got);
  }
  return absl::OkStatus();
}

absl::StatusOr<IdxHeader> ReadHeader(gzFile f, const std::string& path) {
  uint8_t magic[4];
  RETURN_IF_ERROR(ReadExactly(f, path, magic, 4, "the IDX magic number"));
  if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": bad magic number 0x",
        absl::Hex(static_cast<uint32_t>(magic[0]) << 24 | magic[1] << 16 |
                      magic[2] << 8 | magic[3],
                  absl::kZeroPad8),
        "; not an IDX file (expected 0x000008NN)"));
  }
  IdxHeader header;
  header.type = magic[2];
  header.dims.resize(magic[3]);
  for (uint32_t& dim : header.dims) {
    uint8_t b[4];
    RETURN_IF_ERROR(ReadExactly(f, path, b, 4, "the IDX dimensions"));
    dim = static_cast<uint32_t>(b[0]) << 24 | b[1] << 16 | b[2] << 8 | b[3];
  }
  return header;
}

}  // namespace

absl::StatusOr<IdxHeader> ReadIdxHeader(const std::string& path) {
  ASSIGN_OR_RETURN(GzFile f, Open(path));
  return ReadHeader(f.get(), path);
}

absl::StatusOr<IdxBytes> ReadIdxBytes(const std::string& path,
                                      int expected_dims) {
  ASSIGN_OR_RETURN(GzFile f, Open(path));
  IdxBytes out;
  ASSIGN_OR_RETURN(out.header, ReadHeader(f.get(), path));
  if (out.header.type != kTypeUnsignedByte) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": unsupported IDX value type 0x",
        absl::Hex(out.header.type, absl::kZeroPad2),
        "; only unsigned bytes (0x08) are supported"));
  }
  if (static_cast<int>(out.header.dims.size()) != expected_dims) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": has ", out.header.dims.size(),
                     " dimensions, expected ", expected_dims));
  }
  uint64_t total = 1;
  for (uint32_t dim : out.header.dims) total *= dim;
  if (total == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": declares no values (a dimension is 0)"));
  }
  if (total > (uint64_t{1} << 34)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": declares ", total, " values; too large"));
  }
  out.values.resize(total);
  RETURN_IF_ERROR(ReadExactly(f.get(), path, out.values.data(), total,
                              absl::StrCat("the ", total, " declared values")));
  char extra;
  const int more = gzread(f.get(), &extra, 1);
  if (more < 0) {
    int errnum = 0;
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": corrupt file after the values: ",
                     gzerror(f.get(), &errnum)));
  }
  if (more > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": size mismatch: trailing bytes after the ",
                     total, " values the header declares"));
  }
  return out;
}

absl::StatusOr<Dataset> ReadIdxDataset(const std::string& images_path,
                                       const std::string& labels_path) {
  ASSIGN_OR_RETURN(IdxBytes images, ReadIdxBytes(images_path, 3));
  ASSIGN_OR_RETURN(IdxBytes labels, ReadIdxBytes(labels_path, 1));
  if (images.header.dims[0] != labels.header.dims[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        images_path, " has ", images.header.dims[0], " images but ",
        labels_path, " has ", labels.header.dims[0], " labels"));
  }
  Dataset data;
  data.num_features = static_cast<int>(images.header.dims[1] *
                                       images.header.dims[2]);
  data.features.resize(images.values.size());
  constexpr float kScale = 1.0f / 255.0f;
  for (size_t i = 0; i < images.values.size(); ++i) {
    data.features[i] = static_cast<float>(images.values[i]) * kScale;
  }
  data.labels.assign(labels.values.begin(), labels.values.end());
  int max_label = 0;
  for (int32_t l : data.labels) max_label = std::max(max_label, l);
  data.num_classes = max_label + 1;
  return data;
}

}  // namespace ps::worker
