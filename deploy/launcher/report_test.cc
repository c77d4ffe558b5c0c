#include "deploy/launcher/report.h"

#include <map>
#include <string>

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

TEST(RunReportTest, EveryWorkersLossAcrossRestarts) {
  RunReport report(3);
  report.Add(1, Parse("START worker=1 model=mlp(4-2) epochs=1"));
  report.Add(0, Parse("START worker=0 model=cnn (big) epochs=2"));
  EXPECT_EQ(report.model(), "cnn (big)");
  EXPECT_EQ(report.epochs(), 2);
  report.Add(0, Parse("PROGRESS worker=0 epoch=1 step=1 loss=0.5 time_s=1"));
  report.Add(1, Parse("PROGRESS worker=1 epoch=1 step=1 loss=0.75 time_s=2"));
  // Worker 1 crashes and is started again 10 s after its first start: its
  // curve goes on from there.
  report.Restarted(1, 10.0);
  report.Add(1, Parse("PROGRESS worker=1 epoch=1 step=1 loss=0.25 "
                      "time_s=0.5"));
  EXPECT_EQ(report.WorkerLossCsv(),
            "worker,time_s,step,epoch,loss\n"
            "0,1.000,1,1,0.500000\n"
            "1,2.000,1,1,0.750000\n"
            "1,10.500,1,1,0.250000\n");
  // Worker 0's curve and CSV are as before.
  EXPECT_EQ(report.Csv(),
            "time_s,step,epoch,loss,test_accuracy\n1.000,1,1,0.500000,\n");
  const std::string gp = report.GnuplotScript("x.png", "t");
  EXPECT_NE(gp.find("$loss_w1 << EOD\n2.000 0.750000\n10.500 0.250000\nEOD\n"),
            std::string::npos)
      << gp;
  // Worker 2 printed no PROGRESS: its empty block is not plotted.
  EXPECT_NE(gp.find("$loss_w2 << EOD\nEOD\n"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("$loss_w2 using"), std::string::npos) << gp;
  EXPECT_NE(gp.find("plot $loss using 1:2 with lines lw 2 title \"training "
                    "loss, worker 0\", \\\n     $loss_w1 using 1:2 with lines "
                    "lw 1 title \"training loss, worker 1\", \\\n     $acc "),
            std::string::npos)
      << gp;
  // FINAL: worker 0's when it printed one, else the lowest index's.
  EXPECT_FALSE(report.final_accuracy().has_value());
  report.Add(2, Parse("FINAL worker=2 test_accuracy=0.5"));
  report.Add(1, Parse("FINAL worker=1 test_accuracy=0.25"));
  EXPECT_EQ(report.final_accuracy(), 0.25);
  report.Add(0, Parse("FINAL worker=0 test_accuracy=0.75"));
  EXPECT_EQ(report.final_accuracy(), 0.75);
}

TEST(RunReportTest, FinalExtraFieldsAreThoseOfTheChosenFinalLine) {
  RunReport report(2);
  EXPECT_TRUE(report.final_extra_fields().empty());
  report.Add(1, Parse("FINAL worker=1 steps=3 test_accuracy=0.25 time_s=2 "
                      "rows=10"));
  EXPECT_EQ(report.final_extra_fields(),
            (std::map<std::string, std::string>{{"rows", "10"}}));
  // Worker 0's FINAL is the one reported: its fields, without the four
  // every FINAL line has.
  report.Add(0, Parse("FINAL worker=0 steps=3 test_accuracy=0.75 time_s=2 "
                      "teacher_auc=0.8318 shard_rows=4,6"));
  EXPECT_EQ(report.final_extra_fields(),
            (std::map<std::string, std::string>{{"shard_rows", "4,6"},
                                                {"teacher_auc", "0.8318"}}));
}

}  // namespace
}  // namespace ps::launcher
