import assert from "node:assert/strict";
import { join } from "node:path";
import { renderRuntimeUnit } from "../installer/mod.ts";
import {
  DNS_UNITS,
  type DnsSystemd,
  LEGACY_DNS_UNIT,
  RUNTIME_UNITS_ENV,
  systemdDnsRunner,
  systemdRuns,
} from "./dns_unit.ts";
import { tempDir } from "../util/testing/mod.ts";

/** systemd's calls for one switch from slot a to slot b: b reset and started, a stopped, each unit file change read. */
const SWITCH_A_TO_B = [
  "daemon-reload",
  "reset-failed ployz-dns@b.service",
  "start ployz-dns@b.service",
  "stop ployz-dns@a.service",
  "daemon-reload",
];

Deno.test("systemdRuns() follows what the daemon's unit says, never a probe of /run/systemd/system", () => {
  assert.equal(systemdRuns((name) => name === RUNTIME_UNITS_ENV ? "systemd" : undefined), true);
  assert.equal(systemdRuns(() => undefined), false);
  assert.equal(systemdRuns(() => "yes"), false);
});

/** systemd as the DNS switch sees it: unit states, the calls made, and what each started unit says. */
class FakeSystemd implements DnsSystemd {
  calls: string[] = [];
  states = new Map<string, string>();
  says: "yes" | "no" | "failed" = "yes";
  /** How many looks at a started unit answer "no" before {@link says} (a switch that takes a while). */
  slow = 0;
  systemctl(args: string[]): Promise<void> {
    this.calls.push(args.join(" "));
    if (args[0] === "start") this.states.set(args[1], "active");
    if (args[0] === "stop") this.states.set(args[1], "inactive");
    return Promise.resolve();
  }
  activeState(unit: string): Promise<string> {
    return Promise.resolve(this.states.get(unit) ?? "inactive");
  }
  serving(): Promise<"yes" | "no" | "failed"> {
    if (this.slow > 0) {
      this.slow--;
      return Promise.resolve("no");
    }
    return Promise.resolve(this.says);
  }
  pause(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const RELEASE = { deno: "/usr/lib/ployz/releases/0.2.0/deno", appDir: "/usr/lib/ployz/releases/0.2.0" };

async function withUnitDir(fn: (dir: string, text: string) => Promise<void>): Promise<void> {
  await using tmp = await tempDir("ployz-dns-units-");
  const dir = tmp.path;
  await fn(dir, renderRuntimeUnit("dns", RELEASE).text);
}

const exists = (path: string): Promise<boolean> => Deno.stat(path).then(() => true, () => false);

Deno.test("DNS on new software starts in the idle slot, serves, and only then is the old slot stopped", async () => {
  await withUnitDir(async (dir, text) => {
    const systemd = new FakeSystemd();
    await Deno.writeTextFile(join(dir, DNS_UNITS[0]), text.replace("0.2.0", "0.1.0"));
    systemd.states.set(DNS_UNITS[0], "active");
    await systemdDnsRunner(RELEASE, dir, systemd).ensure();
    assert.deepEqual(systemd.calls, SWITCH_A_TO_B);
    assert.equal(await Deno.readTextFile(join(dir, DNS_UNITS[1])), text);
    assert.equal(await exists(join(dir, DNS_UNITS[0])), false);
    // The same software again: nothing starts or stops.
    systemd.calls = [];
    await systemdDnsRunner(RELEASE, dir, systemd).ensure();
    assert.deepEqual(systemd.calls, []);
  });
});

Deno.test("DNS ensure on a fresh Machine starts the first slot", async () => {
  await withUnitDir(async (dir, text) => {
    const systemd = new FakeSystemd();
    await systemdDnsRunner(RELEASE, dir, systemd).ensure();
    assert.deepEqual(systemd.calls, [
      "daemon-reload",
      "reset-failed ployz-dns@a.service",
      "start ployz-dns@a.service",
    ]);
    assert.equal(await Deno.readTextFile(join(dir, DNS_UNITS[0])), text);
  });
});

Deno.test("the single ployz-dns.service of earlier releases is replaced with overlap, then removed", async () => {
  await withUnitDir(async (dir) => {
    const systemd = new FakeSystemd();
    await Deno.writeTextFile(join(dir, LEGACY_DNS_UNIT), "[Service]\nExecStart=/old\n");
    systemd.states.set(LEGACY_DNS_UNIT, "active");
    await systemdDnsRunner(RELEASE, dir, systemd).ensure();
    assert.deepEqual(systemd.calls.filter((c) => !c.startsWith("daemon-reload") && !c.startsWith("reset")), [
      "start ployz-dns@a.service",
      "stop ployz-dns.service",
    ]);
    assert.equal(await exists(join(dir, LEGACY_DNS_UNIT)), false);
    // A slot on this software with a leftover live unit beside it: only the leftover stops.
    systemd.states.set(DNS_UNITS[1], "active");
    systemd.calls = [];
    await systemdDnsRunner(RELEASE, dir, systemd).ensure();
    assert.deepEqual(systemd.calls, ["stop ployz-dns@b.service", "daemon-reload"]);
  });
});

Deno.test("new DNS software that fails or never serves is stopped, and the running slot is kept", async () => {
  for (const says of ["failed", "no"] as const) {
    await withUnitDir(async (dir, text) => {
      const systemd = new FakeSystemd();
      systemd.says = says;
      await Deno.writeTextFile(join(dir, DNS_UNITS[0]), text.replace("0.2.0", "0.1.0"));
      systemd.states.set(DNS_UNITS[0], "active");
      await assert.rejects(
        systemdDnsRunner(RELEASE, dir, systemd, 20).ensure(),
        says === "failed"
          ? /ployz-dns@b\.service ended before it served; the running DNS is kept/
          : /did not serve within/,
      );
      assert.deepEqual(systemd.calls.slice(-2), ["start ployz-dns@b.service", "stop ployz-dns@b.service"]);
      assert.equal(systemd.states.get(DNS_UNITS[0]), "active");
      assert.equal(await exists(join(dir, DNS_UNITS[0])), true);
    });
  }
});

Deno.test("two DNS switches at once run one after the other: the second finds the first's slot and does nothing", async () => {
  await withUnitDir(async (dir, text) => {
    const systemd = new FakeSystemd();
    systemd.slow = 20;
    await Deno.writeTextFile(join(dir, DNS_UNITS[0]), text.replace("0.2.0", "0.1.0"));
    systemd.states.set(DNS_UNITS[0], "active");
    await Promise.all([
      systemdDnsRunner(RELEASE, dir, systemd).ensure(),
      systemdDnsRunner(RELEASE, dir, systemd).ensure(),
    ]);
    // Exactly one switch's calls: unlocked, both would have written, started and waited on slot b.
    assert.deepEqual(systemd.calls, SWITCH_A_TO_B);
    assert.equal(systemd.states.get(DNS_UNITS[1]), "active");
    assert.equal(await exists(join(dir, DNS_UNITS[0])), false);
  });
});

Deno.test("a DNS switch that cannot take the lock in time changes nothing and says why", async () => {
  await withUnitDir(async (dir, text) => {
    const systemd = new FakeSystemd();
    await Deno.writeTextFile(join(dir, DNS_UNITS[0]), text.replace("0.2.0", "0.1.0"));
    systemd.states.set(DNS_UNITS[0], "active");
    const holder = await Deno.open(dir, { read: true });
    try {
      assert.equal(await holder.tryLock(true), true);
      await assert.rejects(
        systemdDnsRunner(RELEASE, dir, systemd, 1000, 300).ensure(),
        /Another DNS switch still holds .* after 0 s; the running DNS is kept/,
      );
      assert.deepEqual(systemd.calls, []);
      assert.equal(await exists(join(dir, DNS_UNITS[1])), false);
    } finally {
      holder.close();
    }
    // Released: the switch goes ahead.
    await systemdDnsRunner(RELEASE, dir, systemd, 1000, 300).ensure();
    assert.equal(systemd.states.get(DNS_UNITS[1]), "active");
  });
});

Deno.test("the DNS unit runs the new binary's --probe before it starts serving", () => {
  const text = renderRuntimeUnit("dns", RELEASE).text;
  const pre = text.split("\n").find((l) => l.startsWith("ExecStartPre="));
  const start = text.split("\n").find((l) => l.startsWith("ExecStart="));
  assert.equal(pre, `${start!.replace("ExecStart=", "ExecStartPre=")} --probe`);
});
