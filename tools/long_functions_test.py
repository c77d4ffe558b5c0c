"""Tests of tools/long_functions.py: which braces open a function, and lengths."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import long_functions as lf  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.realpath(__file__)),
                      "long_functions.py")


def body(n, indent="  "):
    return "".join(f"{indent}x += {i};\n" for i in range(n))


def functions(text):
    """{name: body lines} of every function scan() finds."""
    return {name: max(0, close - opened - 1)
            for name, _, opened, close in lf.scan(text)}


def test_free_function_length_is_lines_between_braces():
    text = "namespace ps {\nint F(int x) {\n" + body(81) + "  return x;\n}\n}\n"
    assert functions(text) == {"F": 82}
    assert [(line, name, length) for line, name, length, _ in
            lf.long_functions("a.cc", text, 80)] == [(2, "F", 82)]


def test_function_at_the_limit_is_not_listed():
    text = "void G() {\n" + body(80) + "}\n"
    assert functions(text) == {"G": 80}
    assert list(lf.long_functions("a.cc", text, 80)) == []


def test_lambdas_and_local_classes_count_toward_their_function():
    text = ("void Outer() {\n"
            "  auto f = [](int a) {\n" + body(3, "    ") + "  };\n"
            "  struct Local { void M() {\n" + body(2, "    ") + "  } };\n"
            "}\n"
            "auto g = [](int a) {\n" + body(5) + "};\n")
    assert functions(text) == {"Outer": 9}


def test_constructor_with_brace_initializers_and_qualifiers():
    text = ("Foo::Foo(int a) : a_{a}, b_(a), c_{{1, 2}} {\n" + body(2) + "}\n"
            "int Foo::Get() const ABSL_LOCKS_EXCLUDED(mu_) {\n  return 1;\n}\n"
            "int Foo::Raw() const ABSL_NO_THREAD_SAFETY_ANALYSIS {\n"
            "  return 2;\n}\n"
            "auto Foo::Trail() -> std::vector<int> {\n  return {};\n}\n"
            "bool Foo::operator==(const Foo& o) const {\n  return true;\n}\n")
    assert functions(text) == {"Foo::Foo": 2, "Foo::Get": 1, "Foo::Raw": 1,
                               "Foo::Trail": 1, "Foo::operator==": 1}


def test_initializers_and_types_are_not_functions():
    text = ("constexpr std::array<int, 3> kA = {1, 2, 3};\n"
            "std::array<std::atomic<int>, kB.size() + 1> buckets_{};\n"
            "Metric Gauge(double v, std::vector<Label> labels = {}) {\n"
            "  return Metric(v);\n}\n"
            "class ABSL_LOCKABLE Widget : public Base<int> {\n"
            " public:\n"
            "  struct Tag final : CompletionTag {\n"
            "    void OnComplete(bool ok) override { Run(ok); }\n"
            "  };\n"
            " private:\n"
            "  class Section {\n"
            "   public:\n"
            "    int Get() const {\n      return 1;\n    }\n"
            "  };\n"
            "  int x_ = 0;\n"
            "};\n"
            "enum class Kind : int { kA, kB };\n"
            "extern \"C\" {\nint CFunc(void) {\n  return 0;\n}\n}\n"
            "extern \"C\" int Fuzz(int) {\n  return 0;\n}\n")
    assert functions(text) == {"Gauge": 1, "OnComplete": 0, "Get": 1,
                               "CFunc": 1, "Fuzz": 1}


def test_braces_in_literals_comments_and_preprocessor_lines_are_ignored():
    text = ("#define OPEN {\n"
            "// a comment {\n"
            "/* { */\n"
            "void H() {\n"
            "  const char* s = \"}}\";\n"
            "  char c = '}';\n"
            "  int n = 1'000;\n"
            "  const char* r = R\"x(})x\";\n"
            "}\n"
            "void After() {\n}\n")
    assert functions(text) == {"H": 4, "After": 0}


def test_gtest_cases_are_named_by_suite_and_test():
    text = "TEST_F(FooTest, DoesX) {\n  EXPECT_TRUE(true);\n}\n"
    assert functions(text) == {"TEST_F(FooTest, DoesX)": 1}


def test_a_stated_reason_excuses_a_long_function():
    text = ("// long-function: one flat table of 90 cases reads best whole.\n"
            "void Table() {\n" + body(90) + "}\n")
    [(line, name, length, reason)] = lf.long_functions("a.cc", text, 80)
    assert (line, name, length) == (2, "Table", 90)
    assert reason == "one flat table of 90 cases reads best whole."


def test_production_filter():
    assert lf.is_production("server/checkpoint.cc")
    assert lf.is_production("common/backend/cuda_kernels.cu")
    assert not lf.is_production("server/checkpoint_test.cc")
    assert not lf.is_production("tests/cluster_harness.cc")
    assert not lf.is_production("client/testing/fake_parameter_server.cc")
    assert not lf.is_production("server/receive_path_bench.cc")
    assert not lf.is_production("tests/fuzz/data_request_fuzzer.cc")
    assert not lf.is_production("third_party/x/y.cc")


def test_command_line_lists_and_checks():
    with tempfile.TemporaryDirectory() as d:
        long_path = os.path.join(d, "long.cc")
        with open(long_path, "w") as f:
            f.write("void Long() {\n" + body(81) + "}\n")
        short_path = os.path.join(d, "short.cc")
        with open(short_path, "w") as f:
            f.write("void Short() {\n" + body(3) + "}\n")
        run = subprocess.run([sys.executable, SCRIPT, "--check", long_path,
                              short_path], capture_output=True, text=True)
        assert run.returncode == 1
        assert run.stdout.endswith("long.cc:1: Long is 81 lines (limit 80)\n")
        assert run.stdout.count("\n") == 1
        ok = subprocess.run([sys.executable, SCRIPT, "--check", "--max-lines",
                             "81", long_path], capture_output=True, text=True)
        assert (ok.returncode, ok.stdout) == (0, "")
