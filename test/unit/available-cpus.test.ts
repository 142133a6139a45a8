import { test } from "node:test";
import assert from "node:assert/strict";
import { availableCpus, cpuQuota, type ReadText } from "../../src/config/available-cpus.ts";

/** A file system holding only these files. */
function files(contents: Record<string, string>): ReadText {
  return (file) => contents[file];
}

test("cgroup v2: cpu.max quota over period, rounded up; 'max' is no quota", () => {
  assert.equal(cpuQuota(files({ "/sys/fs/cgroup/cpu.max": "200000 100000\n" })), 2);
  assert.equal(cpuQuota(files({ "/sys/fs/cgroup/cpu.max": "150000 100000\n" })), 2);
  assert.equal(cpuQuota(files({ "/sys/fs/cgroup/cpu.max": "50000 100000\n" })), 1);
  assert.equal(cpuQuota(files({ "/sys/fs/cgroup/cpu.max": "max 100000\n" })), undefined);
});

test("cgroup v1: cfs_quota_us over cfs_period_us; -1 is no quota", () => {
  const v1 = (quota: string) =>
    files({ "/sys/fs/cgroup/cpu/cpu.cfs_quota_us": `${quota}\n`, "/sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n" });
  assert.equal(cpuQuota(v1("300000")), 3);
  assert.equal(cpuQuota(v1("-1")), undefined);
});

test("no cgroup files: no quota", () => {
  assert.equal(cpuQuota(files({})), undefined);
});

test("the default WEB_CONCURRENCY is the smaller of the schedulable CPUs and the quota", () => {
  const quotaOf2 = files({ "/sys/fs/cgroup/cpu.max": "200000 100000" });
  assert.equal(availableCpus(quotaOf2, 16), 2);
  assert.equal(availableCpus(quotaOf2, 1), 1);
  assert.equal(availableCpus(files({}), 8), 8);
  assert.equal(availableCpus(files({ "/sys/fs/cgroup/cpu.max": "max 100000" }), 4), 4);
});
