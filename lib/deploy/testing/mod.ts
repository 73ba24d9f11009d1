/**
 * The door other areas' tests use to this area's test fakes (never code a program runs).
 *
 * @module
 */
export { buildOf } from "../compose/test_helpers.ts";
export { containerSpec, FakeContainers, observedOf } from "../plan/test_fake.ts";
