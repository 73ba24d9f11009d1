/**
 * The certificate keeper the serving loop drives: on each pass it is told the https hostnames the Cluster routes,
 * and when this Machine is the asker ({@link certificateAsker}) it starts one bounded task per hostname that needs a
 * certificate obtained or renewed ({@link certificateTasks}), at most two asking a CA at a time. A name served from
 * the Cluster's internal root is issued here at once (`internal_ca.ts`). A task publishes each HTTP-01
 * answer as an `acme_challenges` row (so every Machine's Ingress Proxy serves it), waits until every Machine not Down
 * that runs an Ingress Proxy confirmed loading it (challenge acks, bounded: see `challenge_acks.ts`), lets the CA
 * validate, withdraws the row, and writes the
 * certificate row (hostname-keyed, last writer wins). A failure keeps the old certificate, is written as a
 * `certificate_errors` row with the CA's text, and is retried after a jittered, doubling pause per hostname.
 *
 * @module
 */

import type { Store } from "../store/mod.ts";
import { sleep } from "../util/mod.ts";
import {
  type AcmeSettings,
  type ChallengeBoard,
  type IssuedCertificate,
  obtainCertificate,
} from "./acme_issuer.ts";
import { type ChallengeConfirmation, confirmStep, DEFAULT_CONFIRM_MS } from "./challenge_acks.ts";
import {
  certificateAsker,
  certificateRow,
  type CertificateTask,
  certificateTasks,
  retryPauseMs,
  usableCertificate,
} from "./certificates.ts";
import { INTERNAL_ROOT_SETTING, issueInternalCertificate, readClusterRoot } from "./internal_ca.ts";

/** How long a published answer stays servable. */
const ANSWER_LIFETIME_MS = 10 * 60_000;
/** Tasks running at once. */
const MAX_RUNNING = 2;

/** What the keeper needs. */
export interface CertificateKeeperOptions {
  /** This Machine's store. */
  store: Store;
  /** The CA settings, read when a task starts. */
  settings: () => Promise<AcmeSettings>;
  /** Machines observed Down. */
  down: () => ReadonlySet<string>;
  /** Which Machines confirmed serving the answer for `token` now, and which are awaited. */
  confirmation: (token: string) => ChallengeConfirmation;
  /** Asks the serving loop for a pass (after a challenge row is written). */
  kick: () => void;
  /** Bound on the wait for every Machine to confirm an answer; default {@link DEFAULT_CONFIRM_MS}. */
  confirmMs?: number;
  /** Bound on one task; default 120 s. */
  taskTimeoutMs?: number;
  /** The ACME client (tests replace it). */
  obtain?: (settings: AcmeSettings, hostname: string, board: ChallengeBoard) => Promise<IssuedCertificate>;
  /** One line per notable event. */
  log?: (line: string) => void;
  /** Randomness for the jitter; default Math.random. */
  random?: () => number;
}

/** The keeper's view of one hostname. */
export interface KeeperState {
  /** Failed attempts in a row. */
  failures: number;
  /** Not before this time (ms since epoch). */
  retryAtMs: number;
  /** A task runs now. */
  running: boolean;
  /** When the last attempt started (ms since epoch). */
  startedAtMs: number;
}

/** A running keeper. */
export interface CertificateKeeper {
  /** Starts the tasks `hostnames` need now; never waits for one. */
  consider(hostnames: readonly string[]): void;
  /** Per hostname state. */
  state(): ReadonlyMap<string, KeeperState>;
  /** Resolves once every running task ended (each is bounded). */
  stop(): Promise<void>;
}

/** Starts a keeper for this Machine. */
export function startCertificateKeeper(options: CertificateKeeperOptions): CertificateKeeper {
  const { store } = options;
  const log = options.log ?? (() => {});
  const random = options.random ?? Math.random;
  const obtain = options.obtain ?? ((s, h, b) => obtainCertificate(s, h, b, options.taskTimeoutMs));
  const states = new Map<string, KeeperState>();
  const running = new Set<Promise<void>>();
  // Tasks asking a CA now.
  let asking = 0;
  let stopped = false;

  // One board per task: what it saw of the confirmations is told with the task's outcome.
  function boardFor(notes: string[]): ChallengeBoard {
    return {
      async publish(hostname, token, keyAuthorization): Promise<void> {
        store.acmeChallenges.put({
          token,
          "key_authorization": keyAuthorization,
          hostname,
          "expires_at": new Date(Date.now() + ANSWER_LIFETIME_MS).toISOString(),
        });
        options.kick();
        const started = Date.now();
        const bound = options.confirmMs ?? DEFAULT_CONFIRM_MS;
        for (;;) {
          if (stopped) throw new Error("the daemon is stopping");
          const step = confirmStep(hostname, options.confirmation(token), Date.now() - started, bound);
          if (step.kind === "fail") throw new Error(step.message);
          if (step.kind === "validate") {
            const took = Date.now() - started;
            if (step.missing.length === 0) {
              log(
                `certificates: the answer for "${hostname}" is served by ${step.confirmed.join(", ")} ` +
                  `(confirmed in ${took} ms); asking the CA to validate`,
              );
            } else {
              const note = `${step.missing.join(", ")} did not confirm serving the answer within ${
                bound / 1000
              } s`;
              notes.push(note);
              log(
                `certificates: asking the CA to validate "${hostname}" though ${note}; ` +
                  `served by ${step.confirmed.join(", ")}`,
              );
            }
            return;
          }
          await sleep(100);
        }
      },
      withdraw(token): Promise<void> {
        if (store.acmeChallenges.get(token) !== undefined) store.acmeChallenges.delete(token);
        options.kick();
        return Promise.resolve();
      },
    };
  }

  async function run(task: CertificateTask, state: KeeperState): Promise<void> {
    const { hostname, kind, issuer } = task;
    const started = Date.now();
    const notes: string[] = [];
    try {
      // The internal root signs here, at once: no CA to ask, no answer to publish.
      const issued = issuer === "internal"
        ? await issueInternalCertificate(store, hostname)
        : await obtain(await options.settings(), hostname, boardFor(notes));
      const read = usableCertificate({ name: hostname, pem: issued.pem, key: issued.key }, new Date());
      if (!read.ok) throw new Error(`the CA's certificate cannot be served: ${read.reason}`);
      const current = store.certificates.get(hostname);
      const row = certificateRow(read.cert, issuer, store.siteId, new Date());
      if (typeof current?.renew_requested_at === "string") {
        row.renew_requested_at = current.renew_requested_at;
      }
      store.certificates.put(row);
      if (store.certificateErrors.get(hostname) !== undefined) store.certificateErrors.delete(hostname);
      state.failures = 0;
      state.retryAtMs = 0;
      const done = issuer === "internal"
        ? `issued "${hostname}" from the Cluster's internal root`
        : `${kind === "issue" ? "obtained" : "renewed"} "${hostname}"`;
      log(
        `certificates: ${done} serial ${read.cert.serial} ` +
          `until ${read.cert.notAfter.toISOString()} in ${Date.now() - started} ms` +
          (notes.length > 0 ? ` (${notes.join("; ")})` : ""),
      );
    } catch (error) {
      state.failures += 1;
      const pause = retryPauseMs(state.failures, random());
      state.retryAtMs = Date.now() + pause;
      const message = oneLine((error as Error).message) +
        (notes.length > 0 ? ` (validation was asked although ${notes.join("; ")})` : "");
      log(
        `certificates: cannot ${kind} "${hostname}": ${message}; next attempt in ${
          Math.round(pause / 1000)
        } s`,
      );
      // Beside the certificate row, never in it: a failure (maybe on a cut-off Machine) never displaces a newer
      // certificate under last-writer-wins.
      store.certificateErrors.put({
        hostname,
        error: message.slice(0, 4000),
        at: new Date().toISOString(),
        "machine_id": store.siteId,
      });
    }
  }

  return {
    consider(hostnames: readonly string[]): void {
      if (stopped) return;
      const ids = store.liveMachines().map((m) => m.id);
      if (certificateAsker(ids.length > 0 ? ids : [store.siteId], options.down()) !== store.siteId) return;
      const now = new Date();
      const root = readClusterRoot(store.cluster.get(INTERNAL_ROOT_SETTING), now);
      const tasks = certificateTasks({
        hostnames,
        rows: store.certificates.list(),
        now,
        rootPem: root.ok ? root.root.pem : undefined,
      });
      for (const task of tasks) {
        // Internal issuance is local and quick: only the tasks that talk to a CA are limited.
        if (task.issuer === "acme" && asking >= MAX_RUNNING) continue;
        let state = states.get(task.hostname);
        if (state === undefined) {
          state = { failures: 0, retryAtMs: 0, running: false, startedAtMs: 0 };
          states.set(task.hostname, state);
        }
        // An operator's request made after the last attempt started is acted on now, pause or not.
        const askedSince = task.askedAtMs !== undefined && task.askedAtMs > state.startedAtMs;
        if (state.running || (Date.now() < state.retryAtMs && !askedSince)) continue;
        const s = state;
        s.running = true;
        s.startedAtMs = Date.now();
        log(`certificates: ${task.kind} "${task.hostname}" (${task.reason})`);
        if (task.issuer === "acme") asking++;
        const job = run(task, s).finally(() => {
          s.running = false;
          if (task.issuer === "acme") asking--;
          running.delete(job);
          options.kick();
        });
        running.add(job);
      }
    },
    state: () => states,
    async stop(): Promise<void> {
      stopped = true;
      // A task talking to the CA is bounded but may take long; the daemon does not wait past a few seconds.
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        Promise.allSettled([...running]),
        new Promise((resolve) => timer = setTimeout(resolve, 5_000)),
      ]);
      clearTimeout(timer);
    },
  };
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}
