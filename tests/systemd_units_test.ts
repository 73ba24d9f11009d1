// The rendered systemd units checked by systemd itself: `systemd-analyze verify` accepts each, and its offline
// security score stays within each unit's exposure ceiling.
import { ok } from "node:assert/strict";
import { join } from "node:path";
import { renderRuntimeUnit, renderUnit, type UnitSubcommand } from "../lib/installer/mod.ts";
import { needs } from "./support/needs.ts";
import { ROOT } from "./support/spawn.ts";

/** Exposure ceilings: dns and observe stay at or below 5.0, as serve does. */
const MAX_EXPOSURE: Record<UnitSubcommand, number> = { serve: 5.0, dns: 5.0, observe: 5.0 };

function units(): { subcommand: UnitSubcommand; text: string; name: string }[] {
  return (["serve", "dns", "observe"] as const).map((subcommand) => ({
    subcommand,
    ...renderUnit(subcommand, { deno: Deno.execPath(), appDir: ROOT }),
  }));
}

Deno.test(needs(["command:systemd-analyze"], {
  name: "generated units pass systemd-analyze verify and stay within their exposure ceiling",
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "ployz-units-" });
    try {
      const scores: string[] = [];
      // DNS runs as the daemon's runtime units ployz-dns@a and @b: verified under such a name too.
      const dnsSlot = {
        subcommand: "dns" as const,
        ...renderRuntimeUnit("dns", { deno: Deno.execPath(), appDir: ROOT }),
        name: "ployz-dns@a.service",
      };
      for (const unit of [...units(), dnsSlot]) {
        const path = join(dir, unit.name);
        await Deno.writeTextFile(path, unit.text);
        const verify = await new Deno.Command("systemd-analyze", { args: ["verify", path], stderr: "piped" })
          .output();
        const verifyErr = new TextDecoder().decode(verify.stderr);
        ok(verify.success, `systemd-analyze verify ${unit.name} failed: ${verifyErr}`);
        const security = await new Deno.Command("systemd-analyze", {
          args: ["security", "--offline=true", "--no-pager", path],
          stdout: "piped",
          stderr: "piped",
        }).output();
        const text = new TextDecoder().decode(security.stdout) + new TextDecoder().decode(security.stderr);
        const score = Number(text.match(/Overall exposure level for \S+: ([\d.]+)/)?.[1]);
        ok(Number.isFinite(score), `no exposure score for ${unit.name}: ${text.slice(-300)}`);
        ok(
          score <= MAX_EXPOSURE[unit.subcommand],
          `${unit.name} exposure ${score} > ${MAX_EXPOSURE[unit.subcommand]}`,
        );
        scores.push(`${unit.name} ${score}`);
      }
      console.log(`systemd-analyze security exposure: ${scores.join(", ")}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
}));
