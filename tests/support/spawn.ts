// Running programs from end-to-end tests: the repository root, a program run to completion with a clean
// environment or killed at a point of its output, a temp Machine layout, and fixtures.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Layout } from "../../lib/permissions/mod.ts";

/** The repository root. */
export const ROOT: string = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

/** The result of running a program to completion. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cmd args` with a clean environment plus `env` (and `input` on its standard input), and collects its output. */
export async function run(
  cmd: string,
  args: string[],
  env: Record<string, string> = {},
  input?: string,
): Promise<RunResult> {
  const child = new Deno.Command(cmd, {
    args,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1", RUST_BACKTRACE: "0", ...env },
    clearEnv: true,
    stdin: input === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (input !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(input));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/**
 * Runs `cmd args` as {@linkcode run} does and kills it (SIGKILL) as soon as its standard error matches `at`: an
 * operator interrupted at that point. Answers what it printed and its exit code; a run that ended before the point
 * is not killed, and what it printed does not match `at`.
 */
export async function killedAt(
  cmd: string,
  args: string[],
  env: Record<string, string>,
  at: RegExp,
): Promise<{ seen: string; code: number }> {
  const child = new Deno.Command(cmd, {
    args,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", NO_COLOR: "1", RUST_BACKTRACE: "0", ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let seen = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  try {
    while (!at.test(seen)) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
    }
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already exited.
    }
    await reader.cancel();
  }
  return { seen, code: (await child.status).code };
}

/** A Machine layout under a fresh temp directory, with a live unix socket standing in for Docker's. */
export interface TempLayout extends Layout, AsyncDisposable {
  root: string;
  env: Record<string, string>;
}

/** Makes a temp layout; dispose it to close the socket and remove the files. */
export async function tempLayout(): Promise<TempLayout> {
  const root = await Deno.makeTempDir({ prefix: "ployz-layout-" });
  const layout: Layout = {
    dataDir: join(root, "data"),
    runDir: join(root, "run"),
    dockerSocket: join(root, "docker.sock"),
    dockerRoot: join(root, "docker"),
  };
  await Deno.mkdir(join(layout.dataDir, "observe"), { recursive: true });
  await Deno.mkdir(join(layout.dataDir, "install"), { recursive: true });
  await Deno.mkdir(layout.runDir, { recursive: true });
  await Deno.mkdir(join(layout.dockerRoot, "containers", "c1", "local-logs"), { recursive: true });
  await Deno.writeTextFile(join(layout.dockerRoot, "containers", "c1", "local-logs", "container.log"), "");
  await Deno.writeTextFile(join(layout.runDir, "dns.json"), "{}");
  await Deno.writeTextFile(join(layout.dataDir, "install", "source.json"), "{}");
  const listeners = [layout.dockerSocket, join(layout.runDir, "ployz.sock")].map((path) =>
    Deno.listen({ transport: "unix", path })
  );
  const accepting = listeners.map(async (l) => {
    for await (const conn of l) conn.close();
  });
  return {
    ...layout,
    root,
    env: {
      PLOYZ_DATA_DIR: layout.dataDir,
      PLOYZ_RUN_DIR: layout.runDir,
      PLOYZ_DOCKER_SOCKET: layout.dockerSocket,
      PLOYZ_DOCKER_ROOT: layout.dockerRoot,
    },
    async [Symbol.asyncDispose](): Promise<void> {
      listeners.forEach((l) => l.close());
      await Promise.allSettled(accepting);
      await Deno.remove(root, { recursive: true });
    },
  };
}

/** The path of a fixture under tests/fixtures. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

/** True while process `pid` exists (a zombie counts). */
export function alive(pid: number): boolean {
  try {
    return Deno.statSync(`/proc/${pid}`).isDirectory;
  } catch {
    return false;
  }
}

/** True when `path` exists (any kind of file). */
export function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
