/**
 * The serving routes of Machine RPC (`ployz.serving.*`, `ployz.removal.*`): set a Serving Pointer and read its
 * status, mark a removal or cancel it and list the marks, on a participating Machine's copy of the store.
 *
 * @module
 */

import { RpcError, type RpcHandlers } from "../rpc/mod.ts";
import {
  addCertificate,
  addInternalCertificate,
  CertificateError,
  clusterRootView,
  listCertificates,
  listRemovals,
  markRemoval,
  pointerStatus,
  removeCertificate,
  requestRenewal,
  setServingPointer,
} from "../serving/mod.ts";
import type { ClusterLifecycle } from "./cluster_lifecycle.ts";
import type { ServingRuntime } from "./serving_runtime.ts";

/** The handlers of the serving routes. */
export type ServingHandlers = Pick<
  RpcHandlers,
  | "setPointer"
  | "pointerStatus"
  | "markRemoval"
  | "listRemovals"
  | "listCertificates"
  | "renewCertificate"
  | "addCertificate"
  | "removeCertificate"
  | "addInternalCertificate"
  | "clusterRoot"
  | "ingressStatus"
>;

// A refused certificate operation keeps its code on the wire.
async function refused<T>(body: () => T | Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (error) {
    if (error instanceof CertificateError) {
      throw new RpcError(error.code, error.message, { details: error.details });
    }
    throw error;
  }
}

/** The serving route handlers; a Machine that does not participate refuses with `conflict`. */
export function servingHandlers(lifecycle: ClusterLifecycle<ServingRuntime>): ServingHandlers {
  return {
    setPointer(req) {
      const { pointer, previous } = setServingPointer(
        lifecycle.participatingStore("set a Serving Pointer"),
        req,
      );
      return Promise.resolve(previous === undefined ? { pointer } : { pointer, previous });
    },
    pointerStatus(req) {
      const store = lifecycle.participatingStore("read a Serving Pointer");
      return Promise.resolve(pointerStatus(store, req, lifecycle.serving?.down()));
    },
    markRemoval(req) {
      const { removal, previous } = markRemoval(lifecycle.participatingStore("mark a removal"), req);
      return Promise.resolve(previous === undefined ? { removal } : { removal, previous });
    },
    ingressStatus() {
      lifecycle.participatingStore("read the Ingress Proxy's state");
      const state = lifecycle.serving?.loop.ingressState() ?? { proxyId: null, routed: [] };
      return Promise.resolve({ "proxy_id": state.proxyId, routed: state.routed });
    },
    listRemovals(req) {
      return Promise.resolve({ removals: listRemovals(lifecycle.participatingStore("read removals"), req) });
    },
    listCertificates() {
      const store = lifecycle.participatingStore("list certificates");
      return Promise.resolve({ certificates: listCertificates(store) });
    },
    renewCertificate(req) {
      const store = lifecycle.participatingStore("renew a certificate");
      return refused(() => ({ certificate: requestRenewal(store, req.hostname) }));
    },
    addCertificate(req) {
      const store = lifecycle.participatingStore("add a certificate");
      return refused(() => ({ certificate: addCertificate(store, req) }));
    },
    removeCertificate(req) {
      const store = lifecycle.participatingStore("remove a certificate");
      return refused(() => ({ removed: removeCertificate(store, req.hostname) }));
    },
    addInternalCertificate(req) {
      const store = lifecycle.participatingStore("issue an internal certificate");
      return refused(async () => ({ certificate: await addInternalCertificate(store, req.hostname) }));
    },
    clusterRoot() {
      const store = lifecycle.participatingStore("read the Cluster's internal root");
      return refused(() => clusterRootView(store));
    },
  };
}
