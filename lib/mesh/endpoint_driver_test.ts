import { deepEqual } from "node:assert/strict";
import { EndpointDriver } from "./endpoint_driver.ts";
import type { CommandResult, CommandRunner } from "./runner.ts";

const KEY = btoa(String.fromCharCode(...new Uint8Array(32).fill(5)));

// Records every command; `wg show` answers with one peer that never completed a handshake.
function recorder(): { runner: CommandRunner; commands: string[] } {
  const commands: string[] = [];
  const runner: CommandRunner = {
    where: "test",
    run(cmd: string, args: string[]): Promise<CommandResult> {
      commands.push([cmd, ...args.slice(0, 3)].join(" "));
      const dump =
        `private\tpublic\t51820\toff\n${KEY}\t(none)\t192.0.2.2:51820\t10.210.1.0/24\t0\t0\t0\t25\n`;
      return Promise.resolve({ code: 0, stdout: args[0] === "show" ? dump : "", stderr: "" });
    },
  };
  return { runner, commands };
}

Deno.test("a tick given what the caller just read from the interface reads it no second time", async () => {
  const { runner, commands } = recorder();
  const driver = new EndpointDriver(runner, "wg0", { connectionTimeoutMs: 1_000, peerDownMs: 10_000 });
  driver.setCandidates([{ publicKey: KEY, endpoints: ["192.0.2.2:51820", "198.51.100.2:51820"] }], 0);
  const reports = [{ publicKey: KEY, endpoint: "192.0.2.2:51820", allowedIps: [], rxBytes: 0, txBytes: 0 }];
  deepEqual(await driver.tick(500, reports), []);
  deepEqual(commands, []);
  // No handshake within the connection timeout: the next candidate is set, the interface still read once by the
  // caller only.
  deepEqual(await driver.tick(1_500, reports), [{ publicKey: KEY, endpoint: "198.51.100.2:51820" }]);
  deepEqual(commands, ["wg set wg0 peer"]);
  // Without what the caller read, the tick reads the interface itself.
  await driver.tick(1_600);
  deepEqual(commands, ["wg set wg0 peer", "wg show wg0 dump"]);
});
