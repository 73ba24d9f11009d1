/**
 * Body schemas of the replicated tables. Every schema is a loose object: fields a newer Machine adds are kept,
 * never rejected, so a row round-trips through an older reader intact. Fields are only ever added, optional.
 *
 * @module
 */

import * as z from "zod";
import { SIGNING_KEY_PATTERN } from "./signing.ts";

const id = z.string().min(1).max(128);
const name = z.string().min(1).max(256);
// Shapes only; what a consumer needs beyond the shape (inside the Cluster network, no overlap) it checks on read.
const wireguardKey = z.string().regex(
  /^[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=$/,
  "expected a base64 32-byte key",
);
const ipv4Network = z.string().regex(
  /^(\d{1,3}\.){3}\d{1,3}\/\d{1,2}$/,
  "expected an IPv4 network a.b.c.d/n",
);
const hostPort = z.string().max(256).regex(
  /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/,
  "expected host:port",
);

/** A Cluster setting, keyed by its name. */
export const ClusterSettingSchema: z.ZodType<ClusterSetting> = z.looseObject({
  name,
  value: z.unknown().optional(),
});
/** A Cluster setting body Unknown fields are kept. */
export interface ClusterSetting {
  /** Setting name, the key. */
  name: string;
  /** Any JSON value. */
  value?: unknown;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** A Machine's own record, written only by that Machine. */
export const MachineSchema: z.ZodType<Machine> = z.looseObject({
  id,
  name,
  phase: z.string().max(64).optional(),
  "public_key": wireguardKey.optional(),
  "signing_key": z.string().regex(SIGNING_KEY_PATTERN).optional(),
  subnet: ipv4Network.optional(),
  endpoints: z.array(hostPort).max(64).optional(),
  capabilities: z.array(z.string().max(128)).max(1024).optional(),
});
/** A Machine body Unknown fields are kept. */
export interface Machine {
  /** Machine id, the key and the owner. */
  id: string;
  /** Machine Name; may collide with another Machine's. */
  name: string;
  /** Lifecycle phase. */
  phase?: string;
  /** WireGuard public key. */
  "public_key"?: string;
  /** Ed25519 key its changes are signed with (base64); equal to its admitted key in `members`. */
  "signing_key"?: string;
  /** Container subnet the Machine owns. */
  subnet?: string;
  /** WireGuard endpoints, "host:port". */
  endpoints?: string[];
  /** Capability names the Machine's binary serves. */
  capabilities?: string[];
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** A Container as its Machine reports it. Environment values never enter the store, only their names. */
export const ContainerSchema: z.ZodType<Container> = z.looseObject({
  id,
  "machine_id": id,
  project: name,
  service: name,
  deployment: z.string().max(128).optional(),
  name,
  image: z.string().max(1024),
  state: z.string().max(64).optional(),
  health: z.string().max(64).optional(),
  // Addresses are spliced into Caddy upstreams and DNS answers: IP literals only.
  addresses: z.array(z.string().max(64).regex(/^[0-9A-Fa-f:.]+$/, "expected an IP address")).max(64)
    .optional(),
  labels: z.record(z.string(), z.string()).optional(),
  "env_names": z.array(z.string().max(256)).max(1024).optional(),
});
/** A Container body Unknown fields are kept. */
export interface Container {
  /** Container id, the key. */
  id: string;
  /** Owning Machine. */
  "machine_id": string;
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** Deployment id. */
  deployment?: string;
  /** Docker container name. */
  name: string;
  /** Image reference. */
  image: string;
  /** Docker state. */
  state?: string;
  /** Health status. */
  health?: string;
  /** Mesh addresses. */
  addresses?: string[];
  /** Docker labels. */
  labels?: Record<string, string>;
  /** Environment variable names; values stay on the Machine. */
  "env_names"?: string[];
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** A Volume, owned by the Machine that holds it. */
export const VolumeSchema: z.ZodType<Volume> = z.looseObject({
  id,
  "machine_id": id,
  name,
  project: z.string().max(256).optional(),
  state: z.string().max(64).optional(),
  "size_bytes": z.number().int().nonnegative().optional(),
  "used_bytes": z.number().int().nonnegative().optional(),
  epoch: z.number().int().nonnegative().optional(),
  snapshot: z.string().max(128).optional(),
  snapshots: z.array(z.string().max(128)).max(16).optional(),
  "observed_at": z.string().max(64).optional(),
});
/** A Volume body Unknown fields are kept. */
export interface Volume {
  /** Volume id, the key. */
  id: string;
  /** Owning Machine. */
  "machine_id": string;
  /** Volume name, meaningful only with its Machine. */
  name: string;
  /** Project name. */
  project?: string;
  /** Lifecycle state. */
  state?: string;
  /** Size in bytes. */
  "size_bytes"?: number;
  /** Bytes the copy uses. */
  "used_bytes"?: number;
  /** A Writer's epoch (its copy's `state` is `writer`). */
  epoch?: number;
  /** A Mirror's Snapshot (its copy's `state` is `mirror`). */
  snapshot?: string;
  /** The copy's newest run Snapshots, oldest first (at most two). */
  snapshots?: string[];
  /** When the Machine read its Pool for this row (ISO 8601). */
  "observed_at"?: string;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** A certificate, keyed by its name. */
export const CertificateSchema: z.ZodType<Certificate> = z.looseObject({
  name,
  domains: z.array(z.string().max(256)).max(100).optional(),
  "not_after": z.string().max(64).optional(),
  pem: z.string().max(65_536).optional(),
  key: z.string().max(16_384).optional(),
});
/** A certificate body Unknown fields are kept. */
export interface Certificate {
  /** Certificate name, the key. */
  name: string;
  /** Domains it covers. */
  domains?: string[];
  /** Expiry, ISO 8601. */
  "not_after"?: string;
  /** Certificate chain, PEM. */
  pem?: string;
  /** Private key, PEM: replicated because every Machine's Ingress Proxy serves it; never printed. */
  key?: string;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** The last failure to obtain or renew a hostname's certificate, keyed by hostname; apart from the certificate row
 * so a failure written on a cut-off Machine can never win over a newer certificate. */
export const CertificateErrorSchema: z.ZodType<CertificateErrorRow> = z.looseObject({
  hostname: z.string().min(1).max(253),
  error: z.string().max(4096),
  at: z.string().max(64),
  "machine_id": id.optional(),
});
/** A certificate error body. Unknown fields are kept. */
export interface CertificateErrorRow {
  /** The hostname, the key. */
  hostname: string;
  /** What failed, with the CA's text. */
  error: string;
  /** When, ISO 8601. */
  at: string;
  /** The Machine that tried. */
  "machine_id"?: string;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** An ACME HTTP-01 challenge answer, keyed by its token: every Machine's Ingress Proxy serves it on port 80. */
export const AcmeChallengeSchema: z.ZodType<AcmeChallenge> = z.looseObject({
  token: z.string().regex(/^[A-Za-z0-9_-]{1,256}$/),
  "key_authorization": z.string().regex(/^[A-Za-z0-9_-]{1,256}\.[A-Za-z0-9_-]{1,256}$/),
  hostname: z.string().min(1).max(253),
  "expires_at": z.string().max(64).optional(),
});
/** An ACME challenge body. Unknown fields are kept. */
export interface AcmeChallenge {
  /** The challenge token, the key. */
  token: string;
  /** The answer served at `/.well-known/acme-challenge/<token>`. */
  "key_authorization": string;
  /** The hostname being validated. */
  hostname: string;
  /** When the answer stops being served, ISO 8601. */
  "expires_at"?: string;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** A Serving Pointer: which Deployment serves a Service, keyed by "project/service". */
export const ServingPointerSchema: z.ZodType<ServingPointer> = z.looseObject({
  project: name,
  service: name,
  deployment: id,
  version: z.number().int().nonnegative().optional(),
});
/** A Serving Pointer body Unknown fields are kept. */
export interface ServingPointer {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** Deployment that serves the Service. */
  deployment: string;
  /** Pointer version, growing with each move. */
  version?: number;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** A Machine's acknowledgement of a Serving Pointer, keyed by "machine_id/project/service". */
export const AckSchema: z.ZodType<Ack> = z.looseObject({
  "machine_id": id,
  pointer: z.string().min(3).max(513),
  deployment: id,
  version: z.number().int().nonnegative().optional(),
  "acked_at": z.string().max(64).optional(),
});
/** An ack body Unknown fields are kept. */
export interface Ack {
  /** Acknowledging Machine, the owner. */
  "machine_id": string;
  /** Serving Pointer key, "project/service". */
  pointer: string;
  /** Deployment acknowledged. */
  deployment: string;
  /** Pointer version acknowledged. */
  version?: number;
  /** ISO 8601. */
  "acked_at"?: string;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/**
 * A removal mark (`ployz rm`), keyed by "project/service" or "project/*" for a whole Project: the one persisted
 * intent. Each Machine honours an active mark for its own containers of the listed Deployments: they leave every
 * proxy, then stop and are removed. A newer Deployment of the same Project is never covered.
 */
export const RemovalSchema: z.ZodType<Removal> = z.looseObject({
  project: name,
  service: name,
  id,
  deployments: z.array(id).max(1024),
  state: z.string().max(32),
  "created_at": z.string().max(64).optional(),
  "ack_from": z.array(id).max(1024).optional(),
  volumes: z.array(name).max(256).optional(),
});
/** A removal mark body. Unknown fields are kept. */
export interface Removal {
  /** Project name. */
  project: string;
  /** Service name, or `*` for every Service of the Project. */
  service: string;
  /** The removal's id (its Deployment record on the operator's side). */
  id: string;
  /** The Deployments whose containers it removes. */
  deployments: string[];
  /** `active`, or `cancelled` (a member cancelled it: nothing more is removed). */
  state: string;
  /** When it was marked, ISO 8601. */
  "created_at"?: string;
  /** The Machines the operator reached when marking: a live container waits for their acks (and no others'). */
  "ack_from"?: string[];
  /** Named volumes (Docker names) each Machine removes once none of its covered containers is left. */
  volumes?: string[];
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/** A Machine's admitted signing key, keyed by its id: written by the Machine that admitted it (its join). */
export const MemberSchema: z.ZodType<Member> = z.looseObject({
  "machine_id": id,
  "signing_key": z.string().regex(SIGNING_KEY_PATTERN),
  "admitted_by": id.optional(),
});
/** A member body. Unknown fields are kept. */
export interface Member {
  /** The admitted Machine, the key. */
  "machine_id": string;
  /** Its Ed25519 public key, base64. */
  "signing_key": string;
  /** The Machine that admitted it. */
  "admitted_by"?: string;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}

/**
 * A Machine removed from the Cluster while gone (`ployz machine rm M --gone`): a declared fact any Machine may
 * write, since the gone Machine cannot tombstone its own rows. Readers honour it: its rows leave every view, peers
 * keep it only as a quarantined peer whose every request they refuse with this row, and it is not admitted again.
 * Keyed by the retired Machine's id.
 */
export const RetiredMachineSchema: z.ZodType<RetiredMachine> = z.looseObject({
  "machine_id": id,
  name: name.optional(),
  subnet: z.string().max(64).optional(),
  "retired_by": id.optional(),
  "retired_at": z.string().max(64).optional(),
});
/** A retired Machine body. Unknown fields are kept. */
export interface RetiredMachine {
  /** The retired Machine, the key. */
  "machine_id": string;
  /** Its Machine Name when it was retired. */
  name?: string;
  /** Its subnet, kept retired in allocation history. */
  subnet?: string;
  /** The Machine that wrote the mark. */
  "retired_by"?: string;
  /** When, ISO 8601. */
  "retired_at"?: string;
  /** Fields from newer releases, kept as read. */
  [field: string]: unknown;
}
