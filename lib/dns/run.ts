import { createDnsServer } from "./server.ts";
import { DNS_SPEC_FORMAT, type HostPort, readDnsSpec } from "./spec.ts";
import { chooseUpstreams } from "./upstreams.ts";
import { buildZone } from "./zone.ts";
import { messageOf } from "../util/mod.ts";

/** How `ployzd dns` runs. */
export interface RunDnsOptions {
  /** The spec the daemon publishes, normally `/run/ployz/dns.json`. */
  specPath: string;
  /** Where the host's nameservers are, normally `/etc/resolv.conf`. */
  resolvConfPath?: string;
  /** Receives one line per event (loaded, refused, stopped…). */
  log(line: string): void;
  /** Aborting it drains the sockets and ends the run. */
  signal: AbortSignal;
  /** How often the spec is checked besides file-change events; default 1000 ms. */
  pollMs?: number;
  /** Drain ends once nothing arrived for this long; default 300 ms. */
  drainQuietMs?: number;
  /** Drain ends after this long whatever happens; default 3000 ms. */
  drainMaxMs?: number;
}

/** How a run ended: stopped by its signal, or handed the port back because the spec is too new. */
export type DnsExit = { kind: "stopped" } | { kind: "unsupported"; reason: string };

/**
 * Serves Internal DNS from the spec file until `signal` aborts. Binds nothing until the first spec loads; reloads
 * on every change (file-change events plus a periodic stat); a spec that does not load keeps the last good one
 * and logs why. A spec whose `format` this build does not know closes every socket at once and ends the run with
 * `unsupported`, so the port is free for a newer binary.
 */
export async function runDns(options: RunDnsOptions): Promise<DnsExit> {
  const { specPath, log, signal } = options;
  const pollMs = options.pollMs ?? 1000;
  const server = createDnsServer(log);
  let loaded = false;
  let lastSignature = "";
  let lastText: string | undefined;
  let lastNote = "";
  let failedBinds: string[] = [];
  let currentListen: HostPort[] = [];

  function note(line: string): void {
    if (line !== lastNote) log(line);
    lastNote = line;
  }

  async function check(): Promise<Extract<DnsExit, { kind: "unsupported" }> | undefined> {
    let stat: Deno.FileInfo;
    try {
      stat = await Deno.stat(specPath);
    } catch (error) {
      note(
        loaded
          ? `Cannot read the spec "${specPath}", keeping the last good one: ${messageOf(error)}`
          : `Waiting for the spec "${specPath}", answering nothing until it loads: ${messageOf(error)}`,
      );
      return undefined;
    }
    const signature = `${stat.mtime?.getTime()}:${stat.ino}:${stat.size}`;
    if (signature === lastSignature) {
      if (failedBinds.length > 0) failedBinds = server.listen(currentListen);
      return undefined;
    }
    let text: string;
    try {
      text = await Deno.readTextFile(specPath);
    } catch (error) {
      note(`Cannot read the spec "${specPath}": ${messageOf(error)}`);
      return undefined;
    }
    lastSignature = signature;
    if (text === lastText) return undefined;
    lastText = text;
    const reading = readDnsSpec(text);
    if (reading.kind === "unsupported") return { kind: "unsupported", reason: reading.reason };
    if (reading.kind === "invalid") {
      const keep = loaded ? "keeping the last good one" : "answering nothing until one loads";
      note(`Cannot load the spec "${specPath}", ${keep}: ${reading.reason}`);
      return undefined;
    }
    const resolvConf = reading.spec.upstreams ? undefined : await readResolvConf();
    const choice = chooseUpstreams(reading.spec.upstreams, resolvConf, reading.listen);
    for (const line of [...choice.ignored, ...reading.skipped.slice(0, 5)]) log(`Spec note: ${line}`);
    if (reading.skipped.length > 5) log(`Spec note: ${reading.skipped.length - 5} more entries skipped`);
    server.setZone(buildZone(reading.spec), choice.upstreams);
    currentListen = reading.listen;
    failedBinds = server.listen(currentListen);
    loaded = true;
    note(
      `Serving spec format ${DNS_SPEC_FORMAT} generated at "${reading.spec.generated_at}": ` +
        `${reading.spec.services.length} services, ${choice.upstreams.length} upstreams, ` +
        `listening on ${server.bound().join(" ") || "nothing"}`,
    );
    return undefined;
  }

  async function readResolvConf(): Promise<string | undefined> {
    const path = options.resolvConfPath ?? "/etc/resolv.conf";
    try {
      return await Deno.readTextFile(path);
    } catch (error) {
      log(`Cannot read "${path}", forwarding nothing: ${messageOf(error)}`);
      return undefined;
    }
  }

  const watch = fileWatch(specPath);
  try {
    while (!signal.aborted) {
      watch.arm();
      const exit = await check();
      if (exit) {
        await server.close();
        log(`Spec "${specPath}" cannot be served by this build, port handed back: ${exit.reason}`);
        return exit;
      }
      await watch.next(pollMs, signal);
    }
  } finally {
    watch.close();
  }
  await server.drain(options.drainQuietMs ?? 300, options.drainMaxMs ?? 3000);
  log("Stopped: sockets drained and closed");
  return { kind: "stopped" };
}

interface FileWatch {
  arm(): void;
  next(timeoutMs: number, signal: AbortSignal): Promise<void>;
  close(): void;
}

// Watches the spec file itself (the dns permission set reads that file, not its directory). A rename over the
// file ends the watch on the old inode, so every event closes the watcher and the loop re-arms it on the path.
function fileWatch(path: string): FileWatch {
  let watcher: Deno.FsWatcher | undefined;
  let wake: (() => void) | undefined;
  let pending = false;
  function fire(): void {
    pending = true;
    wake?.();
  }
  return {
    arm(): void {
      if (watcher) return;
      let w: Deno.FsWatcher;
      try {
        w = Deno.watchFs(path, { recursive: false });
      } catch {
        return; // Not there yet: the periodic check covers it.
      }
      watcher = w;
      (async () => {
        try {
          for await (const _ of w) {
            fire();
            break;
          }
        } catch {
          // Closed.
        } finally {
          closeQuietly(w);
          if (watcher === w) watcher = undefined;
        }
      })();
    },
    async next(timeoutMs: number, signal: AbortSignal): Promise<void> {
      if (pending) {
        pending = false;
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, timeoutMs);
        signal.addEventListener("abort", done, { once: true });
        wake = done;
        function done(): void {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          wake = undefined;
          resolve();
        }
      });
      pending = false;
    },
    close(): void {
      if (watcher) closeQuietly(watcher);
      watcher = undefined;
    },
  };
}

function closeQuietly(watcher: Deno.FsWatcher): void {
  try {
    watcher.close();
  } catch {
    // Already closed.
  }
}
