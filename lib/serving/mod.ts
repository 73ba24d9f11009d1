/**
 * Serving: what each Machine projects from the replicated rows onto its Internal DNS and its Ingress Proxy, the
 * Serving Pointer and its acks, the retire loop, and the Ingress Proxy's lifecycle (docs/bets.md, bets 3, 9, 10).
 *
 * - **What serves.** A Service with a Serving Pointer is served only by containers of the pointed Deployment; one
 *   without a pointer by all its containers; either way only running, healthy (or probe-less), addressed
 *   containers not marked stopping ({@link servingGroups}).
 * - **DNS.** {@link projectDns} feeds lib/dns's `renderDnsSpec`; {@link DnsSpecWriter} is the single writer of
 *   dns.json; the {@link DnsRunner} strategies keep `ployzd dns` running.
 * - **Caddy.** {@link projectCaddy} renders the projection from `x-ports` (carried as the `ployz.ingress`
 *   label, {@link servingLabels}) and `x-caddy` fragments; {@link loadCaddy} validates each fragment with
 *   `/adapt` (a bad one is skipped and reported), loads with `/load` and confirms with `/config/`.
 * - **Acks and retire.** A Machine acks a pointer once its DNS spec and its Caddy config loaded it
 *   ({@link writeAcks}); {@link retireDecision} stops a Machine's own superseded containers once every Machine not
 *   Down acked, or after the bound ({@link retireAfterMsFromEnv}, default 300 s); {@link startServingLoop} runs it
 *   all from store changes, marking a container stopping and waiting for the local proxy to drop it first.
 * - **Leaving before a stop.** A client marks a container leaving through its Machine; every serving loop leaves
 *   it out and writes a leave ack; the client stops it once {@link leaveStatus} shows
 *   every Machine not Down acked, or its patience ran out; its Machine then drains the requests already in flight
 *   to it ({@link drainInflight}, bounded by {@link DRAIN_BOUND_MS}) before the stop.
 * - **Removal marks.** `ployz rm` writes a name-keyed mark ({@link markRemoval}); every Machine leaves the covered
 *   containers out of its projections and acks it; each Machine stops and removes its own covered containers,
 *   also when it was unreachable during `rm` and gets the mark later.
 * - **Certificates.** https routes are served with certificates kept as `certificates` rows (name-keyed by
 *   hostname, LWW); the serving loop's certificate keeper obtains and renews them from an ACME CA with HTTP-01 on
 *   the asking Machine (smallest id not Down) through `acme-client`, publishing each answer as an `acme_challenges`
 *   row every Machine's Caddy serves, and asking the CA to validate once every Machine not Down that runs an
 *   Ingress Proxy acked loading it (bounded; past the bound it names those that did not); `ployz cert` reads and writes the rows ({@link listCertificates}).
 *   Names under `.internal`, and names opted in ({@link addInternalCertificate}), get their certificate from the
 *   Cluster's internal root instead: one CA per Cluster, kept as the `internal_ca` Cluster setting row and made by
 *   the first Machine that needs it, so a client trusts every Machine by trusting that root ({@link clusterRootView}).
 * - **Ingress Proxy.** Caddy in a container, `ployz-system/caddy` ({@link ingressContainerSpec}); a Deploy fills
 *   missing or stopped slots ({@link fillIngressSlot}); the daemon starts the newest local proxy whose last start
 *   failed exactly under bet 10's conditions ({@link ingressStartDecision}, {@link startIngressDriver}).
 *
 * @module
 */

export { CADDY_ADMIN_DIR_IN_CONTAINER, type CaddyAdmin, openCaddyAdmin } from "./caddy_admin.ts";
export { type CaddyLoadOptions, type CaddyLoadReport, configDials, loadCaddy } from "./caddy_loader.ts";
export {
  type AcmeSettings,
  acmeSettingsFromEnv,
  type ChallengeBoard,
  type IssuedCertificate,
} from "./acme_issuer.ts";
export {
  type CertificateKeeper,
  type CertificateKeeperOptions,
  type KeeperState,
} from "./certificate_keeper.ts";
export { type UsableCertificate } from "./certificates.ts";
export { type ChallengeConfirmation } from "./challenge_acks.ts";
export {
  addCertificate,
  addInternalCertificate,
  CertificateError,
  clusterRootView,
  listCertificates,
  removeCertificate,
  requestRenewal,
} from "./certificate_admin.ts";
export {
  type CaddyFragment,
  type CaddyProjection,
  type CaddyProjectionOptions,
  projectCaddy,
  type ServingProblem,
} from "./caddy_projection.ts";
export {
  type DnsRunner,
  type DnsSystemd,
  RUNTIME_UNIT_DIR,
  systemdDnsRunner,
  systemdRuns,
  systemdUnitRunner,
} from "./dns_unit.ts";
export {
  type IngressDriver,
  type IngressDriverOptions,
  IngressHoldBook,
  startIngressDriver,
} from "./ingress_driver.ts";
export {
  DRAIN_BOUND_MS,
  drainInflight,
  type DrainOptions,
  type DrainResult,
  inflightConnections,
} from "./drain.ts";
export { leaveStatus } from "./leaving.ts";
export { fillIngressSlot, type IngressFill, type IngressFillApi, waitIngressServes } from "./ingress_fill.ts";
export {
  caddyRunDir,
  INGRESS_PROJECT,
  INGRESS_SERVICE,
  ingressContainerName,
  ingressContainerSpec,
  ingressImage,
  type IngressSlotOptions,
  kernelMigratesRequests,
  MIGRATE_REQ_SYSCTL,
} from "./ingress_spec.ts";
export {
  type IngressHoldReason,
  type IngressHolds,
  type IngressRecord,
  type IngressStartDecision,
  isIngressProxy,
} from "./ingress_start.ts";
export { SERVING_LABELS } from "./labels.ts";
export { pointerStatus, setServingPointer } from "./pointer.ts";
export { type RemovalDecision, type RemovalItem, removalKey } from "./removal.ts";
export { listRemovals, markRemoval, type RemovalView } from "./removal_rows.ts";
export { retireAfterMsFromEnv, type RetireDecision, type RetireItem } from "./retire.ts";
export {
  type IngressState,
  type ServingLoop,
  type ServingLoopOptions,
  type ServingPass,
  startServingLoop,
} from "./serving_loop.ts";
export { type ServingContext } from "./serving_set.ts";
