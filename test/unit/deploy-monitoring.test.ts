// deploy/: the Grafana dashboard and the Prometheus alert rules only query metrics agenthost
// exports, and promtool accepts the rules and their unit tests (when promtool is installed).
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import { test } from "node:test";
import assert from "node:assert/strict";
import { PrimaryMetrics, ServiceMetrics } from "../../src/observability/metrics.ts";

const DASHBOARD = "deploy/grafana/agenthost-dashboard.json";
const ALERTS = "deploy/prometheus/alerts.yml";
const ALERT_TESTS = "deploy/prometheus/alerts.test.yml";

/** Series from elsewhere that the alert rules may use: Prometheus's own and kube-state-metrics'. */
const FOREIGN = new Set(["up", "kube_pod_status_ready"]);

/** Every series name agenthost's /metrics can carry (histograms as their three series). */
async function exportedNames(): Promise<Set<string>> {
  const service = new ServiceMetrics();
  service.collectProcessMetrics();
  const primary = new PrimaryMetrics();
  const names = new Set<string>();
  for (const registry of [service.registry, service.processRegistry, primary.registry]) {
    for (const metric of await registry.getMetricsAsJSON()) {
      if (String(metric.type) === "histogram") for (const suffix of ["_bucket", "_sum", "_count"]) names.add(metric.name + suffix);
      else names.add(metric.name);
    }
  }
  return names;
}

/** The series names a PromQL expression selects: identifiers that are not functions, keywords or labels. */
export function seriesNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, "{}")
    .replace(/\[[^\]]*\]/g, "[]")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names: string[] = [];
  for (const match of bare.matchAll(/(?<![\w$.])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)) {
    const name = match[1]!;
    if (["and", "or", "unless", "offset", "bool", "inf", "nan"].includes(name.toLowerCase())) continue;
    names.push(name);
  }
  return names;
}

/** The `expr` of each rule in a Prometheus rules file (inline or a `|` block). */
function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split("\n");
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const match = /^(\s*)expr:\s*(.*)$/.exec(lines[i]!);
    if (!match) continue;
    if (match[2] !== "|") {
      out.push(match[2]!);
      continue;
    }
    const indent = match[1]!.length;
    const block: string[] = [];
    while (i + 1 < lines.length && (lines[i + 1]!.trim() === "" || lines[i + 1]!.search(/\S/) > indent)) block.push(lines[++i]!);
    out.push(block.join("\n"));
  }
  return out;
}

type Panel = { title?: string; targets?: Array<{ expr?: string }>; panels?: Panel[] };

function dashboardQueries(): Array<{ panel: string; expr: string }> {
  const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, "utf8")) as { panels: Panel[]; templating: { list: Array<{ query?: unknown }> } };
  const out: Array<{ panel: string; expr: string }> = [];
  const visit = (panels: Panel[]) => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) if (target.expr) out.push({ panel: panel.title ?? "?", expr: target.expr });
      visit(panel.panels ?? []);
    }
  };
  visit(dashboard.panels);
  return out;
}

test("the expression parser finds series names and nothing else", () => {
  assert.deepEqual(
    seriesNames('histogram_quantile(0.95, sum by (le, route) (rate(agenthost_x_bucket{job=~"$job", status="5"}[$__rate_interval]))) / up > 0.05'),
    ["agenthost_x_bucket", "up"],
  );
  assert.deepEqual(seriesNames("sum without (worker) (process_cpu_seconds_total) and on (job) agenthost_workers"), ["process_cpu_seconds_total", "agenthost_workers"]);
});

test("the Grafana dashboard queries only metrics agenthost exports, and covers what SREs look at first", async () => {
  const exported = await exportedNames();
  const queries = dashboardQueries();
  assert.ok(queries.length >= 20, `${queries.length} queries`);
  const used = new Set<string>();
  for (const { panel, expr } of queries) {
    const names = seriesNames(expr);
    assert.ok(names.length > 0, `panel "${panel}" queries no metric: ${expr}`);
    for (const name of names) {
      assert.ok(exported.has(name), `panel "${panel}" queries ${name}, which agenthost does not export`);
      used.add(name);
    }
  }
  for (const wanted of [
    "agenthost_http_requests_total",
    "agenthost_http_request_duration_seconds_bucket",
    "agenthost_runs_total",
    "agenthost_run_duration_seconds_bucket",
    "agenthost_model_call_duration_seconds_bucket",
    "agenthost_model_time_to_first_token_seconds_bucket",
    "agenthost_workers",
    "agenthost_worker_restarts_total",
    "agenthost_checkpoint_operation_duration_seconds_bucket",
    "agenthost_build_info",
  ]) {
    assert.ok(used.has(wanted), `the dashboard shows ${wanted}`);
  }
  const text = fs.readFileSync(DASHBOARD, "utf8");
  for (const status of ["503", "409", "504"]) assert.ok(text.includes(`status=\\"${status}\\"`), `a ${status} rate`);
});

test("the alert rules query only metrics agenthost exports (or Prometheus's up), and alert on failed runs and model latency", async () => {
  const exported = await exportedNames();
  const yaml = fs.readFileSync(ALERTS, "utf8");
  const expressions = ruleExpressions(yaml);
  assert.ok(expressions.length >= 10);
  for (const expr of expressions) {
    for (const name of seriesNames(expr)) assert.ok(exported.has(name) || FOREIGN.has(name), `${name} in ${expr}`);
  }
  assert.match(yaml, /alert: AgenthostFailedRunRatio/);
  assert.match(yaml, /alert: AgenthostModelLatencyHigh/);
});

const promtool = spawnSync("promtool", ["--version"], { encoding: "utf8" });
const promtoolMissing = promtool.error ? "promtool is not installed (apt-get install prometheus)" : false;

test("promtool accepts the alert rules", { skip: promtoolMissing }, () => {
  const check = spawnSync("promtool", ["check", "rules", ALERTS], { encoding: "utf8" });
  assert.equal(check.status, 0, check.stdout + check.stderr);
});

test("promtool's unit tests of the alert rules pass: failed runs and slow models alert, healthy jobs do not", { skip: promtoolMissing }, () => {
  const run = spawnSync("promtool", ["test", "rules", ALERT_TESTS], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
