/**
 * One way to do each small thing every area needs: a durable atomic file write, reading a file that may be absent, a capped body read, a cancellable
 * sleep and poll loop, stopping a child process, probing a unix socket, importing a rarely needed module on first
 * use, and the shared error codes with the coded error every area's error extends.
 *
 * A leaf: every area may import this `mod.ts`, and it imports no other area.
 *
 * @module
 */

export { type AtomicWriteOptions, readTextIfPresent, syncDir, writeFileAtomic } from "./atomic_file.ts";
export { readBodyCapped } from "./body.ts";
export { importOnFirstUse } from "./lazy.ts";
export { CodedError, ERROR_CODES, type ErrorCode, isErrorCode } from "./errors.ts";
export { stopChild, type StopOptions } from "./process.ts";
export { socketAnswers } from "./socket.ts";
export { type PollOptions, pollUntil, sleep } from "./time.ts";
