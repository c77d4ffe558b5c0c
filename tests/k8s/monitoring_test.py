#!/usr/bin/python3
"""Tests of deploy/monitoring: the alert rules, their promtool unit tests, the
Prometheus configuration and the Grafana dashboard, against the metrics a
real ps_server exports.

Run by //tests/k8s:monitoring_test (pytest, one JUnit case per test):
  pytest_test.sh PS_SERVER=bazel-bin/server/ps_server tests/k8s/monitoring_test.py
The ps_server binary is started once on 127.0.0.1 (OS-picked ports) with a
sync table and two workers, so every metric family it can export appears in
its /metrics answer; that answer is the reference the dashboard and the
rules are held to (a renamed or dropped metric or label fails here).
"""

import json
import os
import re
import subprocess
import tempfile
import time
import urllib.request

import pytest
import yaml

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MONITORING = os.path.join(REPO, "deploy", "monitoring")
ALERTS = os.path.join(MONITORING, "alerts.yaml")
PROMETHEUS_YML = os.path.join(MONITORING, "prometheus.yml")
DASHBOARD = os.path.join(MONITORING, "grafana-dashboard.json")
CTL_README = os.path.join(REPO, "deploy", "ctl", "README.md")
UNIT_TESTS = sorted(f for f in os.listdir(os.path.join(HERE, "monitoring"))
                    if f.endswith(".test.yaml"))

# Labels Prometheus adds to every series of the ps-server job
# (deploy/monitoring/prometheus.yml relabeling, plus job and instance).
TARGET_LABELS = {"job", "instance", "namespace", "pod"}
# Metrics from other exporters the rules and the dashboard may use, with the
# labels they have: Prometheus's own `up`, kube-state-metrics' limits.
EXTERNAL_METRICS = {
    "up": set(),
    "kube_pod_container_resource_limits": {"container", "resource", "unit", "node"},
}
# Words of PromQL that are not metric names when not followed by "(".
PROMQL_WORDS = {"and", "or", "unless", "by", "without", "on", "ignoring",
                "group_left", "group_right", "bool", "offset", "inf", "nan"}

SERVER_CONFIG = """
cluster:
  servers: ["127.0.0.1:1"]
  num_workers: 2
server:
  device: cpu
  metrics_port: 0
tables:
  - {name: w, kind: dense, size: 8, consistency: sync, optimizer: {type: adam}}
  - {name: emb, kind: sparse, dim: 4, consistency: async, optimizer: {type: sgd}}
"""


@pytest.fixture(scope="module")
def exported(request):
    """{family: (type, {label names})} from a real ps_server's /metrics."""
    binary = os.environ.get("PS_SERVER")
    if not binary:
        pytest.fail("set PS_SERVER to the ps_server binary (pytest_test.sh does)")
    tmp = tempfile.mkdtemp(prefix="monitoring_test_", dir=os.environ.get("TEST_TMPDIR"))
    config = os.path.join(tmp, "cluster.yaml")
    with open(config, "w") as f:
        f.write(SERVER_CONFIG)
    port_file = os.path.join(tmp, "metrics_port")
    log = open(os.path.join(tmp, "server.log"), "w")
    proc = subprocess.Popen([binary, "--config", config, "--index", "0",
                             "--listen", "127.0.0.1:0", "--metrics_port", "0",
                             "--metrics_port_file", port_file],
                            stdout=log, stderr=subprocess.STDOUT)
    request.addfinalizer(lambda: (proc.kill(), proc.wait(), log.close()))
    deadline = time.monotonic() + 30
    while not (os.path.exists(port_file) and open(port_file).read().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            with open(log.name) as f:
                pytest.fail("ps_server did not start: %s" % f.read())
        time.sleep(0.05)
    port = int(open(port_file).read())
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10).read()
    return parse_exposition(text.decode())


def parse_exposition(text):
    families = {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            families[m.group(1)] = (m.group(2), set())
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ", line)
        if not m or line.startswith("#"):
            continue
        name = m.group(1)
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        family = name if name in families else base
        if family in families:
            families[family][1].update(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(2) or ""))
    return families


def strip_promql(expr):
    """`expr` without strings, numbers, durations and label lists."""
    e = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"(?<![a-zA-Z_:])\d+(\.\d+)?([eE][+-]?\d+)?", " ", e)
    return e


def metric_names(expr):
    """Metric names an expression selects (identifiers not followed by "(")."""
    e = strip_promql(expr)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        if e[m.end():].lstrip().startswith("(") or m.group(0) in PROMQL_WORDS:
            continue
        names.add(m.group(0))
    return names


def label_names(expr):
    """Label names an expression matches on or groups by."""
    labels = set()
    for matchers in re.findall(r"\{([^}]*)\}", re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)):
        labels.update(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)", matchers))
    for group in re.findall(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)",
                            expr):
        labels.update(l.strip() for l in group.split(",") if l.strip())
    return labels


def family_of(name, exported):
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    if name in exported:
        return name
    if base in exported and exported[base][0] in ("histogram", "summary"):
        return base
    return None


def unknown_in(expr, exported, extra_labels=()):
    """Metrics and labels of `expr` that nothing exports."""
    problems = []
    known_labels = set(TARGET_LABELS) | set(extra_labels)
    for name in sorted(metric_names(expr)):
        family = family_of(name, exported)
        if family is not None:
            known_labels |= exported[family][1]
            if name.endswith("_bucket"):
                known_labels.add("le")
        elif name in EXTERNAL_METRICS:
            known_labels |= EXTERNAL_METRICS[name]
        else:
            problems.append("metric %s" % name)
    problems += ["label %s" % l for l in sorted(label_names(expr) - known_labels)]
    return problems


def output_labels(expr, exported):
    """Labels the series of `expr` carry: the `by` list of an aggregation,
    else the selected metrics' labels and the target labels."""
    groups = re.findall(r"\bby\s*\(([^)]*)\)", expr)
    if groups:
        return {l.strip() for g in groups for l in g.split(",") if l.strip()}
    labels = set(TARGET_LABELS)
    for name in metric_names(expr):
        family = family_of(name, exported)
        labels |= exported[family][1] if family else EXTERNAL_METRICS.get(name, set())
    return labels


def dashboard_panels():
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    panels = []
    for panel in dashboard["panels"]:
        panels.append(panel)
        panels.extend(panel.get("panels") or [])  # collapsed rows
    return dashboard, [p for p in panels if p.get("type") != "row"]


def alert_rules():
    with open(ALERTS) as f:
        return [r for g in yaml.safe_load(f)["groups"] for r in g["rules"]]


# --------------------------------------------------------------------------
# The extractor itself: it must see a renamed metric or label.

def test_extractor_finds_metrics_and_labels():
    expr = ('histogram_quantile(0.99, sum by (le, op) (rate(ps_x_bucket{a="b",c=~"$v"}'
            '[$__rate_interval]))) > 0.5 and on (pod) up == 1 or 4 * ps_y')
    assert metric_names(expr) == {"ps_x_bucket", "up", "ps_y"}
    assert label_names(expr) == {"a", "c", "le", "op", "pod"}
    exported = {"ps_y": ("gauge", {"op"})}
    assert unknown_in(expr, exported) == ["metric ps_x_bucket", "label a", "label c",
                                          "label le"]
    assert output_labels("sum by (table) (rate(ps_y[1m]))", exported) == {"table"}
    assert output_labels("ps_y", exported) == TARGET_LABELS | {"op"}


# --------------------------------------------------------------------------
# Alert rules.

def test_yaml_files_pass_yamllint():
    files = [ALERTS, PROMETHEUS_YML] + [os.path.join(HERE, "monitoring", f)
                                        for f in UNIT_TESTS]
    proc = subprocess.run(["yamllint", "--strict", "-c", os.path.join(HERE, "yamllint.yaml")]
                          + files, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    assert proc.returncode == 0, proc.stdout


def test_promtool_check_rules():
    proc = subprocess.run(["promtool", "check", "rules", ALERTS], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout
    assert "SUCCESS: 9 rules found" in proc.stdout


@pytest.mark.parametrize("unit_test", UNIT_TESTS)
def test_promtool_test_rules(unit_test):
    proc = subprocess.run(["promtool", "test", "rules", unit_test],
                          cwd=os.path.join(HERE, "monitoring"), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout
    assert "SUCCESS" in proc.stdout


def test_every_alert_has_a_unit_test():
    tested = set()
    for unit_test in UNIT_TESTS:
        with open(os.path.join(HERE, "monitoring", unit_test)) as f:
            for test in yaml.safe_load(f)["tests"]:
                for case in test.get("alert_rule_test") or []:
                    if case.get("exp_alerts"):
                        tested.add(case["alertname"])
    assert {r["alert"] for r in alert_rules()} == tested


def test_alerts_use_exported_metrics_and_labels(exported):
    problems = {}
    for rule in alert_rules():
        # $labels.X in the templates must exist on the alert's series too.
        templated = set(re.findall(r"\$labels\.([a-zA-Z_]+)",
                                   json.dumps(rule["annotations"])))
        found = unknown_in(rule["expr"], exported) + [
            "template label %s" % l
            for l in sorted(templated - output_labels(rule["expr"], exported))]
        if found:
            problems[rule["alert"]] = found
    assert problems == {}


def test_prometheus_config_is_valid(tmp_path):
    """promtool check config; Debian's promtool is built without Kubernetes
    service discovery, so the job's kubernetes_sd_configs is swapped for a
    static target (the relabeling, the rule file and the rest are checked)."""
    with open(PROMETHEUS_YML) as f:
        config = yaml.safe_load(f)
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "ps-server")
    assert job.pop("kubernetes_sd_configs") == [{"role": "pod"}]
    job["static_configs"] = [{"targets": ["127.0.0.1:9100"]}]
    relabeled = {r.get("target_label") for r in job["relabel_configs"]}
    assert {"namespace", "pod"} <= relabeled  # the labels the rules group by
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    (tmp_path / "alerts.yaml").write_text(open(ALERTS).read())
    proc = subprocess.run(["promtool", "check", "config", str(tmp_path / "prometheus.yml")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)
    assert proc.returncode == 0, proc.stdout


# --------------------------------------------------------------------------
# Dashboard.

def test_dashboard_parses_with_unique_ids_and_a_datasource_variable():
    dashboard, panels = dashboard_panels()
    ids = [p["id"] for p in dashboard["panels"]] + [
        p["id"] for r in dashboard["panels"] for p in r.get("panels") or []]
    assert len(ids) == len(set(ids))
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    for panel in panels:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["expr"].strip(), panel["title"]


def test_dashboard_covers_the_topics():
    _, panels = dashboard_panels()
    text = " ".join(p["title"] + " " + p.get("description", "") +
                    " ".join(t["expr"] for t in p["targets"]) for p in panels).lower()
    for topic, evidence in [("throughput", "ps_table_requests_total"),
                            ("latency", "ps_data_request_duration_seconds_bucket"),
                            ("staleness", "ps_worker_staleness"),
                            ("sync steps", "ps_table_sync_step"),
                            ("memory", "ps_process_resident_memory_bytes"),
                            ("evictions", "ps_worker_state")]:
        assert evidence in text, topic


def test_dashboard_uses_exported_metrics_and_labels(exported):
    _, panels = dashboard_panels()
    problems = {}
    for panel in panels:
        for target in panel["targets"]:
            legend = set(re.findall(r"\{\{\s*([a-zA-Z_]+)\s*\}\}", target.get("legendFormat", "")))
            found = unknown_in(target["expr"], exported,
                               extra_labels=label_names(target["expr"]))
            found += ["legend label %s" % l for l in
                      sorted(legend - output_labels(target["expr"], exported))]
            if found:
                problems["%s / %s" % (panel["title"], target["refId"])] = found
    assert problems == {}


def test_dashboard_queries_parse(tmp_path):
    """Every panel query, with the Grafana variables filled in, is valid PromQL
    per promtool (as recording rules)."""
    _, panels = dashboard_panels()
    rules = []
    for panel in panels:
        for target in panel["targets"]:
            expr = (target["expr"].replace("$__rate_interval", "1m")
                    .replace("$namespace", "ps").replace("$table", ".*"))
            rules.append({"record": "dashboard:panel%d_%s" % (panel["id"], target["refId"]),
                          "expr": expr})
    path = tmp_path / "dashboard_rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    proc = subprocess.run(["promtool", "check", "rules", str(path)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout


# --------------------------------------------------------------------------
# The documented metric list matches what the server exports.

def test_ctl_readme_lists_exactly_the_exported_metrics(exported):
    with open(CTL_README) as f:
        readme = f.read()
    table = readme[readme.index("| metric |"):readme.index("Cost on the data path")]
    documented = set(re.findall(r"`(ps_[a-z_]+)`", table))
    assert documented == set(exported)
