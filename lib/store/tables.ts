/**
 * The replicated tables: their kind, how a body names its key, and who owns an entity row.
 *
 * @module
 */

import type * as z from "zod";
import {
  AckSchema,
  AcmeChallengeSchema,
  CertificateErrorSchema,
  CertificateSchema,
  ClusterSettingSchema,
  ContainerSchema,
  MachineSchema,
  MemberSchema,
  RemovalSchema,
  RetiredMachineSchema,
  ServingPointerSchema,
  VolumeSchema,
} from "./schemas.ts";

/** Entity rows have one writer, their owner; name rows are last-writer-wins among all Machines. */
export type TableKind = "entity" | "name";

/** How one replicated table is keyed, owned and validated. */
export interface TableSpec {
  readonly name: string;
  readonly kind: TableKind;
  readonly schema: z.ZodType<Record<string, unknown>>;
  keyOf(body: Record<string, unknown>): string;
  /** Owner named by a body (entity tables only). */
  ownerOfBody?(body: Record<string, unknown>): string;
  /** Owner named by the key alone, where the key embeds it (entity tables only). */
  ownerOfKey?(key: string): string;
  /**
   * Top-level string fields of the body copied into columns at write time, so filtered lists compare a column
   * instead of parsing every body. They are not indexed: each index is one more page written per commit, which
   * is most of a write's cost, while the rows they filter are small and bodies are read only for matches.
   * A field added later gets its column, filled from the bodies already held.
   */
  readonly filters: readonly string[];
}

function field(body: Record<string, unknown>, name: string): string {
  return String(body[name]);
}

function beforeSlash(key: string): string {
  const at = key.indexOf("/");
  return at < 0 ? key : key.slice(0, at);
}

/** Every table this release knows, by name. */
export const TABLES: Readonly<Record<string, TableSpec>> = {
  cluster: {
    name: "cluster",
    kind: "name",
    schema: ClusterSettingSchema,
    keyOf: (b) => field(b, "name"),
    filters: [],
  },
  machines: {
    name: "machines",
    kind: "entity",
    schema: MachineSchema,
    keyOf: (b) => field(b, "id"),
    ownerOfBody: (b) => field(b, "id"),
    ownerOfKey: (k) => k,
    filters: [],
  },
  containers: {
    name: "containers",
    kind: "entity",
    schema: ContainerSchema,
    keyOf: (b) => field(b, "id"),
    ownerOfBody: (b) => field(b, "machine_id"),
    filters: ["machine_id", "project", "service"],
  },
  volumes: {
    name: "volumes",
    kind: "entity",
    schema: VolumeSchema,
    keyOf: (b) => field(b, "id"),
    ownerOfBody: (b) => field(b, "machine_id"),
    filters: ["machine_id"],
  },
  certificates: {
    name: "certificates",
    kind: "name",
    schema: CertificateSchema,
    keyOf: (b) => field(b, "name"),
    filters: [],
  },
  "serving_pointers": {
    name: "serving_pointers",
    kind: "name",
    schema: ServingPointerSchema,
    keyOf: (b) => `${field(b, "project")}/${field(b, "service")}`,
    filters: [],
  },
  acks: {
    name: "acks",
    kind: "entity",
    schema: AckSchema,
    keyOf: (b) => `${field(b, "machine_id")}/${field(b, "pointer")}`,
    ownerOfBody: (b) => field(b, "machine_id"),
    ownerOfKey: beforeSlash,
    filters: ["pointer"],
  },
  removals: {
    name: "removals",
    kind: "name",
    schema: RemovalSchema,
    keyOf: (b) => `${field(b, "project")}/${field(b, "service")}`,
    filters: [],
  },
  "acme_challenges": {
    name: "acme_challenges",
    kind: "name",
    schema: AcmeChallengeSchema,
    keyOf: (b) => field(b, "token"),
    filters: [],
  },
  "certificate_errors": {
    name: "certificate_errors",
    kind: "name",
    schema: CertificateErrorSchema,
    keyOf: (b) => field(b, "hostname"),
    filters: [],
  },
  // Admissions: name-keyed because the admitting Machine writes another Machine's entry. A Machine's key never
  // changes and its entry is never deleted, so its old changes stay verifiable after it leaves.
  members: {
    name: "members",
    kind: "name",
    schema: MemberSchema,
    keyOf: (b) => field(b, "machine_id"),
    filters: [],
  },
  // Name-keyed for the same reason: any Machine retires a gone one, whose own rows only it could delete.
  "retired_machines": {
    name: "retired_machines",
    kind: "name",
    schema: RetiredMachineSchema,
    keyOf: (b) => field(b, "machine_id"),
    filters: [],
  },
};

/** Names a table may have on the wire, including tables a newer release adds. */
export const TABLE_NAME_PATTERN: RegExp = /^[a-z][a-z0-9_]{0,62}$/;
