/**
 * Serving routes of Machine RPC, to be merged into the catalog: the client sets a Service's Serving Pointer once a
 * Deployment's new containers pass health, and reads the pointer with this Machine's view of its acks; `ployz cert`
 * lists, renews, adds and removes certificate rows (a key goes in with `certificate_add` and never comes out).
 *
 * @module
 */

import * as z from "zod";
import { type EmptyRequest, EmptyRequestSchema, route, type RouteTable } from "./route.ts";

const name = z.string().min(1).max(256);
const id = z.string().min(1).max(128);

/** What `ployz.serving.set_pointer.v1` asks. */
export interface SetPointerRequest {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** The Deployment that serves from now on. */
  deployment: string;
}

/** Reader of {@link SetPointerRequest}; fields it does not know are ignored. */
export const SetPointerRequestSchema: z.ZodType<SetPointerRequest> = z.lazy(() =>
  z.object({
    project: name,
    service: name,
    deployment: id,
  })
);

/** A Serving Pointer on the wire. */
export interface PointerWire {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
  /** Deployment that serves. */
  deployment: string;
  /** Grows with each move. */
  version?: number;
}

const PointerWireSchema: z.ZodType<PointerWire> = z.lazy(() =>
  z.looseObject({
    project: z.string(),
    service: z.string(),
    deployment: z.string(),
    version: z.number().optional(),
  })
);

/** What `ployz.serving.set_pointer.v1` answers. */
export interface SetPointerResponse {
  /** The pointer as this Machine wrote it. */
  pointer: PointerWire;
  /** The pointer it replaced, if any. */
  previous?: PointerWire;
}

/** Tolerant reader of {@link SetPointerResponse}. */
export const SetPointerResponseSchema: z.ZodType<SetPointerResponse> = z.lazy(() =>
  z.looseObject({
    pointer: PointerWireSchema,
    previous: PointerWireSchema.optional(),
  })
);

/** What `ployz.serving.pointer_status.v1` asks. */
export interface PointerStatusRequest {
  /** Project name. */
  project: string;
  /** Service name. */
  service: string;
}

/** Reader of {@link PointerStatusRequest}; fields it does not know are ignored. */
export const PointerStatusRequestSchema: z.ZodType<PointerStatusRequest> = z.lazy(() =>
  z.object({
    project: name,
    service: name,
  })
);

/** What `ployz.serving.pointer_status.v1` answers: this Machine's observation, never the Cluster's truth. */
export interface PointerStatusResponse {
  /** The pointer, when one is set. */
  pointer?: PointerWire;
  /** Acks this Machine holds for the pointer's key. */
  acks: { "machine_id": string; deployment: string; version?: number; "acked_at"?: string }[];
  /** Machines that have not acked the current pointer. */
  missing: string[];
}

/** Tolerant reader of {@link PointerStatusResponse}. */
export const PointerStatusResponseSchema: z.ZodType<PointerStatusResponse> = z.lazy(() =>
  z.looseObject({
    pointer: PointerWireSchema.optional(),
    acks: z.array(z.looseObject({
      "machine_id": z.string(),
      deployment: z.string(),
      version: z.number().optional(),
      "acked_at": z.string().optional(),
    })),
    missing: z.array(z.string()),
  })
);

/** A removal mark on the wire. */
export interface RemovalWire {
  /** Project name. */
  project: string;
  /** Service name, or `*` for the whole Project. */
  service: string;
  /** The removal's id. */
  id: string;
  /** Deployments whose containers it removes. */
  deployments: string[];
  /** `active` or `cancelled`. */
  state: string;
  /** When it was marked, ISO 8601. */
  "created_at"?: string;
  /** Machines whose acks a live container waits for. */
  "ack_from"?: string[];
  /** Named volumes removed with it. */
  volumes?: string[];
}

const RemovalWireSchema: z.ZodType<RemovalWire> = z.lazy(() =>
  z.looseObject({
    project: z.string(),
    service: z.string(),
    id: z.string(),
    deployments: z.array(z.string()),
    state: z.string(),
    "created_at": z.string().optional(),
    "ack_from": z.array(z.string()).optional(),
  })
);

/** What `ployz.removal.mark.v1` asks: mark a Project (or one Service) removed, or cancel its mark. */
export interface MarkRemovalRequest {
  /** Project name. */
  project: string;
  /** Service name; absent for the whole Project. */
  service?: string;
  /** The removal's id. */
  id: string;
  /** Deployments the caller knows of; the Machine adds those its copy holds. */
  deployments: string[];
  /** `active` marks, `cancelled` cancels. */
  state: "active" | "cancelled";
  /** Machines whose acks a live container waits for (the ones the caller reached). */
  "ack_from"?: string[];
  /** Named volumes (Docker names) to remove once no covered container is left; confirmed as Data Loss. */
  volumes?: string[];
}

/** Reader of {@link MarkRemovalRequest}; fields it does not know are ignored. */
export const MarkRemovalRequestSchema: z.ZodType<MarkRemovalRequest> = z.lazy(() =>
  z.object({
    project: name,
    service: name.optional(),
    id,
    deployments: z.array(id).max(1024),
    state: z.enum(["active", "cancelled"]),
    "ack_from": z.array(id).max(1024).optional(),
    volumes: z.array(name).max(256).optional(),
  })
);

/** What `ployz.removal.mark.v1` answers. */
export interface MarkRemovalResponse {
  /** The mark as this Machine wrote it. */
  removal: RemovalWire;
  /** The mark it replaced, if any. */
  previous?: RemovalWire;
}

/** Tolerant reader of {@link MarkRemovalResponse}. */
export const MarkRemovalResponseSchema: z.ZodType<MarkRemovalResponse> = z.lazy(() =>
  z.looseObject({
    removal: RemovalWireSchema,
    previous: RemovalWireSchema.optional(),
  })
);

/** What `ployz.removal.list.v1` asks. */
export interface ListRemovalsRequest {
  /** Only this Project's marks. */
  project?: string;
}

/** Reader of {@link ListRemovalsRequest}. */
export const ListRemovalsRequestSchema: z.ZodType<ListRemovalsRequest> = z.lazy(() =>
  z.object({
    project: name.optional(),
  })
);

/** What `ployz.removal.list.v1` answers: this Machine's copy of the marks and their progress. */
export interface ListRemovalsResponse {
  /** Each mark, who acked it, and the covered container rows this copy still holds. */
  removals: {
    removal: RemovalWire;
    acked: string[];
    remaining: { "machine_id": string; id: string; name: string; state: string }[];
    /** Named volumes a Machine could not remove for the mark, from its ack; absent from older daemons. */
    "volume_errors"?: { "machine_id": string; error: string }[];
  }[];
}

/** Tolerant reader of {@link ListRemovalsResponse}. */
export const ListRemovalsResponseSchema: z.ZodType<ListRemovalsResponse> = z.lazy(() =>
  z.looseObject({
    removals: z.array(z.looseObject({
      removal: RemovalWireSchema,
      acked: z.array(z.string()),
      remaining: z.array(z.looseObject({
        "machine_id": z.string(),
        id: z.string(),
        name: z.string(),
        state: z.string(),
      })),
      "volume_errors": z.array(z.looseObject({ "machine_id": z.string(), error: z.string().max(1024) })).max(
        4096,
      )
        .optional(),
    })),
  })
);

/** One certificate as `ployz cert ls` shows it, on the wire: everything but the key. */
export interface CertificateWire {
  /** The hostname, the row's key. */
  hostname: string;
  /**
   * `acme` (obtained and renewed by ployz), `internal` (issued and renewed by ployz from the Cluster's internal
   * root) or `operator` (added with `ployz cert add`).
   */
  source: string;
  /** True when every Machine can serve it (it parses, covers the name, matches its key, has not expired). */
  servable: boolean;
  /** Why it cannot be served, when not servable. */
  problem?: string;
  /** Issuer's distinguished name. */
  issuer?: string;
  /** Leaf serial, hex. */
  serial?: string;
  /** Expiry, ISO 8601. */
  "not_after"?: string;
  /** When it was last obtained or renewed. */
  "renewed_at"?: string;
  /** The Machine that last obtained or renewed it. */
  "renewed_by"?: string;
  /** A renewal asked for and not yet done. */
  "renew_requested_at"?: string;
  /** The last failure, with the CA's text. */
  "last_error"?: string;
  /** When it failed. */
  "last_error_at"?: string;
}

const CertificateWireSchema: z.ZodType<CertificateWire> = z.lazy(() =>
  z.looseObject({
    hostname: z.string(),
    source: z.string(),
    servable: z.boolean(),
    problem: z.string().optional(),
    issuer: z.string().optional(),
    serial: z.string().optional(),
    "not_after": z.string().optional(),
    "renewed_at": z.string().optional(),
    "renewed_by": z.string().optional(),
    "renew_requested_at": z.string().optional(),
    "last_error": z.string().optional(),
    "last_error_at": z.string().optional(),
  })
);

/** What `ployz.serving.certificates.v1` answers: this Machine's copy of the `certificates` rows. */
export interface CertificatesResponse {
  /** Sorted by hostname. */
  certificates: CertificateWire[];
}

/** Tolerant reader of {@link CertificatesResponse}. */
export const CertificatesResponseSchema: z.ZodType<CertificatesResponse> = z.lazy(() =>
  z.looseObject({
    certificates: z.array(CertificateWireSchema),
  })
);

/** What the certificate routes that name one hostname ask. */
export interface CertificateRequest {
  /** The hostname. */
  hostname: string;
}

/** Reader of {@link CertificateRequest}. */
export const CertificateRequestSchema: z.ZodType<CertificateRequest> = z.lazy(() =>
  z.object({
    hostname: z.string().min(1).max(253),
  })
);

/** What `ployz.serving.certificate_add.v1` asks: an operator's certificate chain and key, PEM. */
export interface AddCertificateRequest {
  /** The hostname. */
  hostname: string;
  /** Certificate chain, PEM. */
  pem: string;
  /** Private key, PEM. */
  key: string;
}

/** Reader of {@link AddCertificateRequest}. */
export const AddCertificateRequestSchema: z.ZodType<AddCertificateRequest> = z.lazy(() =>
  z.object({
    hostname: z.string().min(1).max(253),
    pem: z.string().min(1).max(65_536),
    key: z.string().min(1).max(16_384),
  })
);

/** What the certificate routes that change one row answer. */
export interface CertificateResponse {
  /** The row as written, or as it was before removal. */
  certificate?: CertificateWire;
  /** For removal: whether a row was there. */
  removed?: boolean;
}

/** Tolerant reader of {@link CertificateResponse}. */
export const CertificateResponseSchema: z.ZodType<CertificateResponse> = z.lazy(() =>
  z.looseObject({
    certificate: CertificateWireSchema.optional(),
    removed: z.boolean().optional(),
  })
);

/** What `ployz.serving.certificate_root.v1` answers: the Cluster's internal root certificate, never its key. */
export interface ClusterRootWire {
  /** The root certificate, PEM: what a client trusts to reach the Cluster's internal names. */
  pem: string;
  /** Its SHA-256 fingerprint, hex with colons (as `openssl x509 -fingerprint -sha256` prints it). */
  fingerprint: string;
  /** Its subject's distinguished name. */
  subject: string;
  /** Expiry, ISO 8601. */
  "not_after": string;
  /** The Machine that made it. */
  "created_by"?: string;
  /** When it was made. */
  "created_at"?: string;
}

/** Tolerant reader of {@link ClusterRootWire}. */
export const ClusterRootWireSchema: z.ZodType<ClusterRootWire> = z.lazy(() =>
  z.looseObject({
    pem: z.string().max(65_536),
    fingerprint: z.string().max(256),
    subject: z.string().max(1024),
    "not_after": z.string().max(64),
    "created_by": z.string().max(256).optional(),
    "created_at": z.string().max(64).optional(),
  })
);

/** What `ployz.serving.ingress_status.v1` asks: nothing. */
export type IngressStatusRequest = EmptyRequest;

/** What `ployz.serving.ingress_status.v1` answers: what this Machine's Ingress Proxy serves, as last loaded. */
export interface IngressStatusResponse {
  /** The Ingress Proxy container the config was loaded into; null when none runs or none loaded yet. */
  "proxy_id": string | null;
  /** `project/service` of each Service with routes and at least one upstream in that config. */
  routed: string[];
}

/** Tolerant reader of {@link IngressStatusResponse}. */
export const IngressStatusResponseSchema: z.ZodType<IngressStatusResponse> = z.lazy(() =>
  z.looseObject({
    "proxy_id": z.string().nullable(),
    routed: z.array(z.string()),
  })
);

/** Request and response types of the serving routes, by method name. */
export interface ServingRouteTypes {
  /**
   * `ployz.serving.set_pointer.v1`: moves a Service's Serving Pointer to a Deployment (a name-keyed, last-
   * writer-wins row).
   */
  setPointer: [SetPointerRequest, SetPointerResponse];
  /** `ployz.serving.pointer_status.v1`: a Serving Pointer and this Machine's view of its acks. */
  pointerStatus: [PointerStatusRequest, PointerStatusResponse];
  /** `ployz.removal.mark.v1`: marks a Project or Service removed, or cancels its mark. */
  markRemoval: [MarkRemovalRequest, MarkRemovalResponse];
  /** `ployz.removal.list.v1`: removal marks and this Machine's view of their progress. */
  listRemovals: [ListRemovalsRequest, ListRemovalsResponse];
  /** `ployz.serving.certificates.v1`: the certificate rows this Machine holds, without keys. */
  listCertificates: [EmptyRequest, CertificatesResponse];
  /** `ployz.serving.certificate_renew.v1`: asks for a renewal of an ACME certificate. */
  renewCertificate: [CertificateRequest, CertificateResponse];
  /** `ployz.serving.certificate_add.v1`: adds an operator's certificate and key for a hostname. */
  addCertificate: [AddCertificateRequest, CertificateResponse];
  /** `ployz.serving.certificate_remove.v1`: removes a hostname's certificate row. */
  removeCertificate: [CertificateRequest, CertificateResponse];
  /**
   * `ployz.serving.certificate_internal.v1`: serves a hostname from the Cluster's internal root (made first
   * when there is none), issuing now.
   */
  addInternalCertificate: [CertificateRequest, CertificateResponse];
  /** `ployz.serving.certificate_root.v1`: the Cluster's internal root certificate, without its key. */
  clusterRoot: [EmptyRequest, ClusterRootWire];
  /**
   * `ployz.serving.ingress_status.v1`: what this Machine's Ingress Proxy serves, as its serving loop last
   * loaded it.
   */
  ingressStatus: [IngressStatusRequest, IngressStatusResponse];
}

/** The serving rows, to be spread into the catalog. */
export const SERVING_ROUTES: RouteTable<ServingRouteTypes> = Object.freeze({
  setPointer: route("ployz.serving.set_pointer.v1", SetPointerRequestSchema, SetPointerResponseSchema),
  pointerStatus: route(
    "ployz.serving.pointer_status.v1",
    PointerStatusRequestSchema,
    PointerStatusResponseSchema,
  ),
  markRemoval: route("ployz.removal.mark.v1", MarkRemovalRequestSchema, MarkRemovalResponseSchema),
  listRemovals: route("ployz.removal.list.v1", ListRemovalsRequestSchema, ListRemovalsResponseSchema),
  listCertificates: route("ployz.serving.certificates.v1", EmptyRequestSchema, CertificatesResponseSchema),
  renewCertificate: route(
    "ployz.serving.certificate_renew.v1",
    CertificateRequestSchema,
    CertificateResponseSchema,
  ),
  addCertificate: route(
    "ployz.serving.certificate_add.v1",
    AddCertificateRequestSchema,
    CertificateResponseSchema,
  ),
  removeCertificate: route(
    "ployz.serving.certificate_remove.v1",
    CertificateRequestSchema,
    CertificateResponseSchema,
  ),
  addInternalCertificate: route(
    "ployz.serving.certificate_internal.v1",
    CertificateRequestSchema,
    CertificateResponseSchema,
  ),
  clusterRoot: route("ployz.serving.certificate_root.v1", EmptyRequestSchema, ClusterRootWireSchema),
  ingressStatus: route(
    "ployz.serving.ingress_status.v1",
    EmptyRequestSchema,
    IngressStatusResponseSchema,
  ),
});
