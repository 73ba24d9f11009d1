import { allowedScopes, type PermissionSet, type PermissionValue } from "./sets.ts";

/** What a narrowed Worker reports back to the process that started it. */
export interface WorkerExit {
  /** The subcommand's exit code. */
  exitCode: number;
}

/**
 * The `deno.permissions` option for a Worker narrowed to `set`. Env variables outside the allow list stay
 * hidden because the parent runs with `--ignore-env`, which carries into Workers. A Worker cannot be denied
 * anything, so a set's `deny` exceptions do not reach it: they hold where Deno reads the set itself (`-P`).
 */
export function workerPermissions(set: PermissionSet): Deno.PermissionOptions {
  if (set.all) return "inherit";
  const env = set.env;
  const envValue = typeof env === "object" && !Array.isArray(env) ? env.allow ?? false : env ?? false;
  return {
    read: scopes(allowedScopes(set.read)),
    write: scopes(set.write),
    net: scopes(allowedScopes(set.net)),
    run: scopes(set.run),
    sys: scopes(set.sys) as Deno.PermissionOptionsObject["sys"],
    ffi: scopes(set.ffi),
    env: scopes(envValue),
  };
}

function scopes(value: PermissionValue | undefined): boolean | string[] {
  return value ?? false;
}

/**
 * Runs `module` in a Worker narrowed to `set`, posts it `message`, and resolves with the exit code the module
 * posts back as `{ exitCode }`. Signal listeners registered inside the Worker receive the process's signals, so
 * a subcommand stops the same way in a Worker as in its own process.
 */
export function runInWorker(module: URL, set: PermissionSet, message: unknown): Promise<number> {
  const worker = new Worker(module, {
    type: "module",
    name: module.pathname.split("/").pop(),
    deno: { permissions: workerPermissions(set) },
  });
  return new Promise<number>((resolve) => {
    const finish = (code: number): void => {
      worker.terminate();
      resolve(code);
    };
    worker.onmessage = (event: MessageEvent<WorkerExit>): void => finish(event.data.exitCode);
    worker.onerror = (event: ErrorEvent): void => {
      event.preventDefault();
      console.error(`error[internal]: ${event.message}`);
      finish(1);
    };
    worker.postMessage(message);
  });
}
