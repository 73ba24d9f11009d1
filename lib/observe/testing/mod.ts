/**
 * The door other areas' tests and benchmarks use to this area's test fixtures (never code a program runs).
 *
 * @module
 */
export { busyHour } from "../test_support.ts";
