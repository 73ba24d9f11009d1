// Digest pinning at plan time: each image a Project names is resolved once, before the Snapshot, to the digest every
// Machine will run: the digest written in the Compose file, else the registry's (pull_policy: always, or when no
// Machine holds the tag), else the one the Entry Machine (or the first Machine that holds the tag) pulled it by. The
// Services then run `name:tag@sha256:…`, so a tag moved in the registry changes the container spec (a replacement)
// and two Machines can never run different images for one tag. An image no registry knows (built or loaded on a
// Machine) stays as written and is copied between Machines as before.
import {
  digestFor,
  DOCKER_HUB,
  type ImageRef,
  type ImageSource,
  type NormalizedProject,
  type NormalizedService,
  parseImageRef,
  pinRef,
  type RegistryAuth,
  repositoryOf,
  SNAPSHOT_ANSWER_MS,
} from "../deploy/mod.ts";
import { CAPABILITIES } from "../rpc/mod.ts";
import type { DeployMachineApi, DeployMachines } from "./deploy_machines.ts";
import { OperatorError } from "./errors.ts";
import { answerWithin, messageOf } from "../util/mod.ts";

/** The credentials of a registry host, or `undefined` to ask anonymously. */
export type AuthLookup = (host: string) => Promise<RegistryAuth | undefined>;

/** What {@linkcode pinImages} decided. */
export interface PinnedImages {
  /** The Project with each Service's image pinned. */
  project: NormalizedProject;
  /** Where each image comes from, for the planner and the Preview. */
  sources: ImageSource[];
  /** Things the operator should read. */
  warnings: string[];
}

type Policy = NormalizedService["pullPolicy"];
const STRENGTH: Record<Policy, number> = { never: 0, missing: 1, always: 2 };

interface Held {
  machine: string;
  digests: string[];
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" ? code : "internal";
}

/** The Machine that asks registries: the Entry Machine, or the first one that can. */
async function resolver(machines: DeployMachines): Promise<DeployMachineApi | undefined> {
  for (const h of machines.handles) {
    try {
      await h.api.requireCapability(CAPABILITIES.resolveImage);
      return h.api;
    } catch {
      // An older daemon: try the next Machine.
    }
  }
  return undefined;
}

/**
 * Which observed Machines hold `ref`, with its registry digests. A Machine that does not answer within the Snapshot's
 * bound is taken as not holding it.
 */
async function holders(machines: DeployMachines, ref: string): Promise<Held[]> {
  const answers = await Promise.allSettled(machines.handles.map(async (h) => {
    const answer = await answerWithin(
      h.api.inspectImage({ ref }),
      SNAPSHOT_ANSWER_MS,
      () => new OperatorError("unavailable", `Machine "${h.name}" sent no answer about "${ref}"`),
    );
    return answer.present ? { machine: h.name, digests: answer.repo_digests ?? [] } : undefined;
  }));
  return answers.flatMap((a) => a.status === "fulfilled" && a.value !== undefined ? [a.value] : []);
}

/** Asks registry `host` for the digest of `ref`; `signal` withdraws the question. */
type Asker = (ref: string, host: string, signal?: AbortSignal) => Promise<string>;

/** Asks a registry for the digest of a reference, through the first Machine that can ask registries. */
function registryAsker(
  machines: DeployMachines,
  auth: AuthLookup,
): Asker {
  let asker: Promise<DeployMachineApi | undefined> | undefined;
  return async (ref, host, signal) => {
    asker ??= resolver(machines);
    const api = await asker;
    if (api === undefined || api.resolveImage === undefined) {
      throw new OperatorError(
        "unsupported",
        `No reachable Machine can ask registry "${host}" (upgrade ployzd)`,
      );
    }
    const credentials = await auth(host);
    signal?.throwIfAborted();
    return (await api.resolveImage({ ref, ...(credentials === undefined ? {} : { auth: credentials }) }, {
      signal,
    }))
      .digest;
  };
}

/**
 * Where each image a Deploy already pinned comes from, for a plan made from Saved State (the Global catch-up): the
 * digest stays the one the Deploy pinned, and a registry is asked only whether it serves that digest, never what a
 * tag points to now. Images saved without a digest (built or loaded on a Machine) get no source: peers copy them.
 */
export async function pinnedSources(
  project: NormalizedProject,
  machines: DeployMachines,
  auth: AuthLookup,
): Promise<ImageSource[]> {
  const byImage = new Map<string, { parsed: ImageRef; services: string[] }>();
  for (const service of Object.values(project.services)) {
    if (service.build !== undefined) continue;
    const parsed = parseImageRef(service.image);
    if (typeof parsed === "string" || parsed.digest === undefined) continue;
    const entry = byImage.get(service.image) ?? { parsed, services: [] };
    entry.services.push(service.name);
    byImage.set(service.image, entry);
  }
  const ask = registryAsker(machines, auth);
  return await Promise.all(
    [...byImage].map(([written, { parsed, services }]) =>
      // With a digest, pinOne asks the registry for `repository@digest` only; it refuses nothing.
      pinOne(written, parsed, "missing", services, machines, ask, [], "the Deploy that saved it")
    ),
  );
}

/** Pins every Service's image; throws `unauthenticated`, `not_found` or `unavailable` naming image and registry. */
export async function pinImages(
  project: NormalizedProject,
  machines: DeployMachines,
  auth: AuthLookup,
): Promise<PinnedImages> {
  const warnings: string[] = [];
  const byImage = new Map<string, { policy: Policy; services: string[] }>();
  for (const service of Object.values(project.services)) {
    // A built image is the build's to name and place; no registry knows it.
    if (service.build !== undefined) continue;
    const entry = byImage.get(service.image) ?? { policy: "never" as Policy, services: [] };
    if (STRENGTH[service.pullPolicy] > STRENGTH[entry.policy]) entry.policy = service.pullPolicy;
    entry.services.push(service.name);
    byImage.set(service.image, entry);
  }
  const ask = registryAsker(machines, auth);
  const images = [...byImage].map(([written, { policy, services }]) => {
    const parsed = parseImageRef(written);
    if (typeof parsed === "string") {
      throw new OperatorError("invalid_argument", `Image "${written}" is not a valid reference: ${parsed}`, {
        services,
      });
    }
    return { written, parsed, policy, services, warnings: [] as string[] };
  });
  // Every image is asked about at once; the refusal and the warnings come in the Project's order, whatever
  // order the answers came in.
  const settled = await Promise.allSettled(
    images.map((i) => pinOne(i.written, i.parsed, i.policy, i.services, machines, ask, i.warnings)),
  );
  const refused = settled.find((r) => r.status === "rejected");
  if (refused !== undefined) throw refused.reason;
  const sources = settled.map((r) => (r as PromiseFulfilledResult<ImageSource>).value);
  warnings.push(...images.flatMap((i) => i.warnings));
  const pinned = new Map(sources.map((source) => [source.written, source.ref]));
  const out: NormalizedProject = {
    ...project,
    services: Object.fromEntries(
      Object.entries(project.services).map((
        [name, s],
      ) => [name, { ...s, image: pinned.get(s.image) ?? s.image }]),
    ),
  };
  return { project: out, sources, warnings };
}

/** Whether the reference names a registry, and that registry is not Docker Hub (a bare name is Docker Hub's). */
function namesRegistry(parsed: ImageRef): boolean {
  return parsed.domain !== DOCKER_HUB;
}

async function pinOne(
  written: string,
  parsed: ImageRef,
  policy: Policy,
  services: string[],
  machines: DeployMachines,
  ask: Asker,
  warnings: string[],
  pinnedBy = "the Compose file",
): Promise<ImageSource> {
  const registry = parsed.domain;
  const base = { written, registry, services };
  const named = `Service${services.length === 1 ? "" : "s"} ${services.map((s) => `"${s}"`).join(", ")}`;
  const refuse = (error: unknown, what: string): never => {
    const code = codeOf(error);
    // The Machine's message starts with its own "Cannot resolve image "…": "; say the image once.
    const reason = messageOf(error).replace(`Cannot resolve image "${written}": `, "");
    throw new OperatorError(
      code === "unauthenticated" || code === "not_found" || code === "unavailable" || code === "unsupported"
        ? code
        : "unavailable",
      `${what} ${reason}`,
      { image: written, registry },
    );
  };
  let digest = parsed.digest;
  let from = digest === undefined ? "" : pinnedBy;
  let registryState: ImageSource["registryState"] | undefined;
  let registryMessage: string | undefined;
  // How many Machines answered that they hold the tag by the digest that is pinned: they hold the pinned reference.
  let holdingPinned = 0;
  if (digest === undefined) {
    // A registry the reference names (the operator's own) is asked while the Machines are, one round trip instead
    // of two in a row; its answer is used only when they show it is needed (pull_policy: always, or no Machine
    // holds the tag), and the question is withdrawn otherwise. Docker Hub, which meters requests, and a name
    // without a registry (often an image built on a Machine) are asked only when needed.
    const withdraw = new AbortController();
    const early = policy === "always" || (policy === "missing" && namesRegistry(parsed))
      ? ask(written, registry, withdraw.signal)
      : undefined;
    early?.catch(() => {});
    const held = await holders(machines, written);
    const machineDigest = held.map((h) => ({ machine: h.machine, digest: digestFor(parsed, h.digests) }))
      .find((h) => h.digest !== undefined);
    if (policy === "always" || held.length === 0) {
      if (policy === "never") {
        throw new OperatorError(
          "not_found",
          `Image "${written}" of ${named} is on no observed Machine, and pull_policy: never forbids asking registry "${registry}"`,
          { image: written },
        );
      }
      try {
        digest = await (early ?? ask(written, registry));
        from = `registry "${registry}"`;
        registryState = "available";
      } catch (error) {
        if (codeOf(error) !== "unavailable" || machineDigest === undefined) {
          refuse(
            error,
            held.length === 0
              ? `Image "${written}" of ${named} is on no observed Machine, and`
              : `Cannot resolve image "${written}" of ${named}:`,
          );
        }
        digest = machineDigest!.digest;
        from = `Machine "${machineDigest!.machine}"`;
        registryState = "unreachable";
        registryMessage = messageOf(error);
        warnings.push(
          `Registry "${registry}" did not answer for "${written}" (pull_policy: always): running ${
            digest!.slice(0, 19)
          }… that Machine "${machineDigest!.machine}" holds`,
        );
      }
    } else if (machineDigest !== undefined) {
      withdraw.abort();
      digest = machineDigest.digest;
      holdingPinned = held.filter((h) => digestFor(parsed, h.digests) === digest).length;
      from = `Machine "${machineDigest.machine}"`;
    } else {
      withdraw.abort();
      // Built or loaded on a Machine: no registry knows it; Machines copy it from each other.
      return { ...base, ref: written, from: `Machine "${held[0].machine}"`, registryState: "none" };
    }
  }
  const ref = pinRef(parsed, digest!);
  if (registryState === undefined) {
    // Ask the registry only when some Machine lacks the digest: it decides between a pull and a peer copy. When
    // every Machine already said it holds the tag by this digest, asking them again would tell nothing new.
    const held = holdingPinned === machines.handles.length ? [] : await holders(machines, ref);
    if (holdingPinned < machines.handles.length && held.length < machines.handles.length) {
      try {
        await ask(`${repositoryOf(parsed)}@${digest}`, registry);
        registryState = "available";
      } catch (error) {
        registryState = "unreachable";
        registryMessage = messageOf(error);
      }
    } else {
      registryState = "available";
    }
  }
  return {
    ...base,
    ref,
    digest,
    from,
    registryState,
    ...(registryMessage === undefined ? {} : { registryMessage }),
  };
}
