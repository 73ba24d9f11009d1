/**
 * The Machine side of Deploy: what a Machine's daemon needs to act on its own containers, and nothing of the
 * client side. It is the Docker adapter ({@linkcode openEngine}) plus the rules each Machine re-checks on every
 * create (label limits, placement) and the serving labels its projections read back.
 *
 * Why a narrower door than `lib/deploy/mod.ts`: that one also carries the Compose loader (with the YAML parser),
 * the planner and the executor, which only the CLI runs. `ployzd serve` imports this door alone, so its process
 * never loads them (`tests/module_graph_test.ts` holds it to that).
 *
 * @module
 */

export * from "../docker/mod.ts";
export {
  LABEL_LIMITS,
  labelKeyProblem,
  labelValueProblem,
  type MachineFacts,
  placementRefusal,
  type PlacementRule,
} from "../compose/placement.ts";
export { SERVING_LABELS, servingLabels, type ServingSource } from "../compose/serving_labels.ts";
export type { MachineApi } from "../plan/machine_api.ts";
