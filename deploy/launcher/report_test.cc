#include "deploy/launcher/report.h"

#include "gtest/gtest.h"

namespace ps::launcher {
namespace {

ProtocolLine Parse(const std::string& line) {
  std::optional<ProtocolLine> p = ParseProtocolLine(line);
  EXPECT_TRUE(p.has_value()) << line;
  return p.value_or(ProtocolLine{});
}

TEST(ProtocolLineTest, ParsesKindAndFields) {
  ProtocolLine p = Parse(
      "START worker=1 model=mlp(784-256-128-10) device=cpu (OpenBLAS) "
      "consistency=sync steps_per_epoch=468 epochs=3");
  EXPECT_EQ(p.kind, "START");
  EXPECT_EQ(p.fields.at("device"), "cpu (OpenBLAS)");
  EXPECT_EQ(p.fields.at("model"), "mlp(784-256-128-10)");
  EXPECT_EQ(p.Number("steps_per_epoch"), 468.0);
  EXPECT_FALSE(p.Number("model").has_value());
  EXPECT_FALSE(p.Number("missing").has_value());
  EXPECT_FALSE(ParseProtocolLine("[info] PROGRESS is not at the start"));
  EXPECT_FALSE(ParseProtocolLine(""));
  EXPECT_FALSE(ParseProtocolLine("PROGRESS stray"));
}

TEST(RunReportTest, TracksProgressCurveAndResult) {
  RunReport report(2);
  report.Add(0, Parse("START worker=0 steps_per_epoch=10 epochs=2"));
  report.Add(0, Parse("PROGRESS worker=0 epoch=1 step=5 loss=0.9 "
                      "samples_per_s=100 time_s=1.5"));
  report.Add(1, Parse("PROGRESS worker=1 epoch=1 step=5 loss=0.8 "
                      "samples_per_s=50 time_s=1.4"));
  report.Add(0, Parse("EVAL worker=0 epoch=1 step=10 test_accuracy=0.75 "
                      "time_s=2.25"));
  EXPECT_EQ(report.ProgressText(10),
            "[###.......] epoch 1/2 step 5/20 loss 0.9000 acc 0.7500 "
            "150 samples/s");
  EXPECT_EQ(report.ProgressText(0),
            "epoch 1/2 step 5/20 loss 0.9000 acc 0.7500 150 samples/s");
  EXPECT_FALSE(report.samples_per_s().has_value());
  report.Add(0, Parse("FINAL worker=0 steps=20 test_accuracy=0.8125 "
                      "time_s=4"));
  report.Add(0, Parse("DONE worker=0 steps=20 samples=1280 wall_s=4 "
                      "samples_per_s=320"));
  EXPECT_FALSE(report.all_done());
  report.Add(1, Parse("DONE worker=1 steps=20 samples=1280 wall_s=3.2 "
                      "samples_per_s=400"));
  EXPECT_TRUE(report.all_done());
  EXPECT_EQ(report.final_accuracy(), 0.8125);
  EXPECT_DOUBLE_EQ(*report.samples_per_s(), 2560.0 / 4.0);
  EXPECT_EQ(report.Csv(),
            "time_s,step,epoch,loss,test_accuracy\n"
            "1.500,5,1,0.900000,\n"
            "2.250,10,1,,0.7500\n");
  const std::string gp = report.GnuplotScript("out/x.png", "t");
  EXPECT_NE(gp.find("$loss << EOD\n1.500 0.900000\nEOD\n"), std::string::npos)
      << gp;
  EXPECT_NE(gp.find("$acc << EOD\n2.250 0.7500\nEOD\n"), std::string::npos);
  EXPECT_NE(gp.find("set output \"out/x.png\""), std::string::npos);
}

}  // namespace
}  // namespace ps::launcher
