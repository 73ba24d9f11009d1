/**
 * One way to do each small thing every area needs: a durable atomic file write, reading a file that may be absent, a
 * capped body read and joining byte chunks, a cancellable sleep and poll loop, stopping a child process, probing a
 * unix socket, importing a rarely needed module on first use, splitting a stream into lines, the shared error codes
 * with the coded error every area's error extends, the message of any thrown value, and `PLOYZ_TRACE` marks.
 *
 * A leaf: every area may import this `mod.ts`, and it imports no other area.
 *
 * @module
 */

export {
  type AtomicWriteOptions,
  readJsonIfPresent,
  readTextIfPresent,
  syncDir,
  writeFileAtomic,
} from "./atomic_file.ts";
export { concatBytes, readBodyCapped } from "./body.ts";
export { damagedRelease, importOnFirstUse } from "./lazy.ts";
export { linesUntilAborted, textLines } from "./lines.ts";
export { CodedError, ERROR_CODES, type ErrorCode, isErrorCode, messageOf } from "./errors.ts";
export { stopChild, type StopOptions } from "./process.ts";
export { socketAnswers } from "./socket.ts";
export { answerWithin, describeMs, type PollOptions, pollUntil, sleep } from "./time.ts";
export { traceMark } from "./trace.ts";
