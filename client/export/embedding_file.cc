#include "client/export/embedding_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "zlib.h"

namespace ps {
namespace {

// Field offsets of the header (see the header file).
constexpr size_t kOffVersion = 8;
constexpr size_t kOffHeaderBytes = 12;
constexpr size_t kOffRows = 16;
constexpr size_t kOffDim = 24;
constexpr size_t kOffType = 28;
constexpr size_t kOffSlots = 32;
constexpr size_t kOffShards = 36;
constexpr size_t kOffCrc = 40;
constexpr size_t kOffTable = 48;
constexpr size_t kOffOptimizer = kOffTable + kEmbeddingTableNameBytes;

template <typename T>
void Put(std::string* buf, size_t at, T v) {
  std::memcpy(buf->data() + at, &v, sizeof(T));
}

template <typename T>
T Get(const std::string& buf, size_t at) {
  T v;
  std::memcpy(&v, buf.data() + at, sizeof(T));
  return v;
}

std::string EncodeHeader(const EmbeddingFileHeader& h) {
  std::string buf(kEmbeddingHeaderBytes, '\0');
  std::memcpy(buf.data(), kEmbeddingFileMagic, sizeof(kEmbeddingFileMagic));
  Put<uint32_t>(&buf, kOffVersion, kEmbeddingFileVersion);
  Put<uint32_t>(&buf, kOffHeaderBytes, kEmbeddingHeaderBytes);
  Put<uint64_t>(&buf, kOffRows, h.num_rows);
  Put<uint32_t>(&buf, kOffDim, h.dim);
  Put<uint32_t>(&buf, kOffType, static_cast<uint32_t>(h.value_type));
  Put<uint32_t>(&buf, kOffSlots, h.num_state_slots);
  Put<uint32_t>(&buf, kOffShards, h.num_shards);
  Put<uint32_t>(&buf, kOffCrc, h.crc32);
  std::memcpy(buf.data() + kOffTable, h.table.data(), h.table.size());
  std::memcpy(buf.data() + kOffOptimizer, h.optimizer.data(),
              h.optimizer.size());
  return buf;
}

std::string Field(const std::string& buf, size_t at, size_t max) {
  const std::string raw = buf.substr(at, max);
  return raw.substr(0, raw.find('\0'));
}

absl::Status Io(const std::string& what, const std::string& path) {
  return absl::InternalError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

}  // namespace

uint64_t EmbeddingFileHeader::RecordBytes() const {
  return sizeof(uint64_t) + uint64_t{dim} * InfoOf(value_type).bytes +
         uint64_t{num_state_slots} * dim * sizeof(float);
}

absl::StatusOr<std::unique_ptr<EmbeddingFileWriter>> EmbeddingFileWriter::Create(
    const std::string& path, const EmbeddingFileHeader& header) {
  if (header.dim == 0) {
    return absl::InvalidArgumentError("embedding file: dim must be > 0");
  }
  if (header.table.size() > kEmbeddingTableNameBytes ||
      header.optimizer.size() > kEmbeddingOptimizerNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding file: table name (", header.table.size(),
        " bytes) or optimizer name (", header.optimizer.size(),
        " bytes) too long (max ", kEmbeddingTableNameBytes, " / ",
        kEmbeddingOptimizerNameBytes, ")"));
  }
  const std::string tmp = path + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) return Io("cannot create", tmp);
  EmbeddingFileHeader h = header;
  h.num_rows = 0;
  h.crc32 = static_cast<uint32_t>(crc32(0L, Z_NULL, 0));
  std::unique_ptr<EmbeddingFileWriter> writer(
      new EmbeddingFileWriter(path, h, file));
  const std::string bytes = EncodeHeader(h);
  if (absl::Status s = writer->Write(bytes.data(), bytes.size()); !s.ok()) {
    return s;
  }
  return writer;
}

EmbeddingFileWriter::EmbeddingFileWriter(std::string path,
                                         EmbeddingFileHeader header,
                                         std::FILE* file)
    : path_(std::move(path)),
      tmp_path_(path_ + ".tmp"),
      header_(std::move(header)),
      file_(file) {}

EmbeddingFileWriter::~EmbeddingFileWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!finished_) std::remove(tmp_path_.c_str());
}

absl::Status EmbeddingFileWriter::Write(const void* data, size_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    return Io("writing", tmp_path_);
  }
  return absl::OkStatus();
}

absl::Status EmbeddingFileWriter::Append(absl::Span<const uint64_t> ids,
                                         absl::Span<const float> values,
                                         absl::Span<const float> state) {
  const uint64_t n = ids.size();
  const uint32_t dim = header_.dim;
  const uint64_t slots = header_.num_state_slots;
  if (values.size() != n * dim || state.size() != slots * n * dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding file: ", n, " rows need ", n * dim, " values and ",
        slots * n * dim, " state values; got ", values.size(), " and ",
        state.size()));
  }
  const ValueTypeInfo& type = InfoOf(header_.value_type);
  const size_t value_bytes = dim * type.bytes;
  record_.resize(header_.RecordBytes());
  for (uint64_t r = 0; r < n; ++r) {
    std::memcpy(record_.data(), &ids[r], sizeof(uint64_t));
    type.encode(values.subspan(r * dim, dim), record_.data() + 8);
    for (uint64_t q = 0; q < slots; ++q) {
      std::memcpy(record_.data() + 8 + value_bytes + q * dim * sizeof(float),
                  state.data() + (q * n + r) * dim, dim * sizeof(float));
    }
    header_.crc32 = static_cast<uint32_t>(
        crc32_z(header_.crc32, reinterpret_cast<const Bytef*>(record_.data()),
              record_.size()));
    if (absl::Status s = Write(record_.data(), record_.size()); !s.ok()) {
      return s;
    }
  }
  header_.num_rows += n;
  return absl::OkStatus();
}

absl::StatusOr<EmbeddingFileHeader> EmbeddingFileWriter::Finish() {
  const std::string bytes = EncodeHeader(header_);
  if (std::fseek(file_, 0, SEEK_SET) != 0) return Io("seeking", tmp_path_);
  if (absl::Status s = Write(bytes.data(), bytes.size()); !s.ok()) return s;
  if (std::fflush(file_) != 0 || fsync(fileno(file_)) != 0) {
    return Io("flushing", tmp_path_);
  }
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (closed != 0) return Io("closing", tmp_path_);
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    return Io("renaming into place", path_);
  }
  finished_ = true;
  return header_;
}

absl::StatusOr<EmbeddingTable> ReadEmbeddingFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto bad = [&path](const std::string& problem) {
    return absl::DataLossError(absl::StrCat(path, ": ", problem));
  };
  if (data.size() < kEmbeddingHeaderBytes ||
      std::memcmp(data.data(), kEmbeddingFileMagic,
                  sizeof(kEmbeddingFileMagic)) != 0) {
    return bad("not an embedding export file (wrong magic or too short)");
  }
  const uint32_t version = Get<uint32_t>(data, kOffVersion);
  if (version != kEmbeddingFileVersion) {
    return bad(absl::StrCat("format version ", version, "; this reader reads ",
                            kEmbeddingFileVersion));
  }
  EmbeddingTable t;
  EmbeddingFileHeader& h = t.header;
  const uint32_t header_bytes = Get<uint32_t>(data, kOffHeaderBytes);
  h.num_rows = Get<uint64_t>(data, kOffRows);
  h.dim = Get<uint32_t>(data, kOffDim);
  const uint32_t type = Get<uint32_t>(data, kOffType);
  h.num_state_slots = Get<uint32_t>(data, kOffSlots);
  h.num_shards = Get<uint32_t>(data, kOffShards);
  h.crc32 = Get<uint32_t>(data, kOffCrc);
  h.table = Field(data, kOffTable, kEmbeddingTableNameBytes);
  h.optimizer = Field(data, kOffOptimizer, kEmbeddingOptimizerNameBytes);
  if (!IsValueType(static_cast<int>(type)) || h.dim == 0 ||
      header_bytes < kEmbeddingHeaderBytes || header_bytes > data.size()) {
    return bad(absl::StrCat("bad header (element type ", type, ", dim ",
                            h.dim, ", header size ", header_bytes, ")"));
  }
  h.value_type = static_cast<ValueType>(type);
  const uint64_t record = h.RecordBytes();
  const uint64_t body = data.size() - header_bytes;
  if (body / record != h.num_rows || body % record != 0) {
    return bad(absl::StrCat(body, " bytes of records for ", h.num_rows,
                            " rows of ", record, " bytes (truncated?)"));
  }
  const char* records = data.data() + header_bytes;
  const uint32_t crc = static_cast<uint32_t>(
      crc32_z(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(records),
              body));
  if (crc != h.crc32) {
    return bad(absl::StrCat("checksum mismatch (CRC-32 ", crc,
                            ", header says ", h.crc32, ")"));
  }
  const uint64_t n = h.num_rows;
  const uint32_t dim = h.dim;
  const ValueTypeInfo& info = InfoOf(h.value_type);
  t.ids.resize(n);
  t.values.resize(n * dim);
  t.state.assign(h.num_state_slots, std::vector<float>(n * dim));
  for (uint64_t r = 0; r < n; ++r) {
    const char* rec = records + r * record;
    std::memcpy(&t.ids[r], rec, sizeof(uint64_t));
    info.decode(absl::string_view(rec + 8, dim * info.bytes),
                t.values.data() + r * dim);
    for (uint32_t q = 0; q < h.num_state_slots; ++q) {
      std::memcpy(t.state[q].data() + r * dim,
                  rec + 8 + dim * info.bytes + q * dim * sizeof(float),
                  dim * sizeof(float));
    }
  }
  return t;
}

}  // namespace ps
