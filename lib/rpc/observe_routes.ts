/**
 * Observe routes of Machine RPC: the log contract (LogHistory and TailLogs, which every release keeps serving; docs/rpc.md) and metric
 * history. Each Machine answers from its own Observe Store only; a client fans the call out and merges.
 *
 * TailLogs streams NDJSON frames. The variants every reader knows are `line` and `note`; `heartbeat` is sent only
 * to a caller that asked for it with `heartbeat: true`, and any later variant gets its own opt-in request field,
 * because readers reject variants they do not know (rule 5).
 *
 * @module
 */

import * as z from "zod";
import { route, type RouteTable } from "./route.ts";

const label = z.string().min(1).max(256);
/** Nanoseconds since the epoch as a decimal string, or an RFC 3339 time. */
const time = z.string().min(1).max(64);

/** Which containers' output a log query reads; every field given must match. */
export interface LogSelectorWire {
  /** `ployz.project`. */
  project?: string;
  /** `ployz.service`. */
  service?: string;
  /** `ployz.deployment`: tells one Deployment's output from another with the same names. */
  deployment?: string;
  /** A container id, or a unique prefix of one. */
  container?: string;
}

const LogSelectorSchema: z.ZodType<LogSelectorWire> = z.lazy(() =>
  z.object({
    project: label.optional(),
    service: label.optional(),
    deployment: label.optional(),
    container: z.string().min(1).max(128).optional(),
  })
);

/** The most lines one LogHistory answer carries. */
export const MAX_LOG_LINES = 10_000;

/** What `ployz.observe.log_history.v1` asks. */
export interface LogHistoryRequest {
  /** Whose output. */
  selector: LogSelectorWire;
  /** Lines at or after this time: nanoseconds since the epoch as a decimal string, or RFC 3339. */
  since: string;
  /** Lines before this time; default no bound. */
  until?: string;
  /** Only lines containing this text (plain, case-sensitive). */
  grep?: string;
  /** At most this many lines, the newest in the window; 1 to {@link MAX_LOG_LINES}. */
  limit: number;
}

/** Reader of {@link LogHistoryRequest}; fields it does not know are ignored. */
export const LogHistoryRequestSchema: z.ZodType<LogHistoryRequest> = z.lazy(() =>
  z.object({
    selector: LogSelectorSchema,
    since: time,
    until: time.optional(),
    grep: z.string().max(1024).optional(),
    limit: z.number().int().min(1).max(MAX_LOG_LINES),
  })
);

/** One line of container output on the wire. */
export interface LogLineWire {
  /** The Machine that ran the container (its `ployz.machine` label). */
  "machine_id": string;
  /** The name of the Machine that answered. */
  "machine_name"?: string;
  /** Docker's container id; the container may no longer exist. */
  "container_id": string;
  /** The container's name. */
  "container_name"?: string;
  /** `ployz.project`. */
  project?: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment`. */
  deployment: string;
  /** `stdout` or `stderr`. */
  stream: string;
  /** When Docker received the line: nanoseconds since the epoch as a decimal string (it exceeds 2^53). */
  "time_nano": string;
  /** The line without its newline. */
  text: string;
  /** A fragment of a longer line, continued by the container's next line. */
  partial?: boolean;
}

const LogLineSchema: z.ZodType<LogLineWire> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string(),
    "machine_name": z.string().optional(),
    "container_id": z.string(),
    "container_name": z.string().optional(),
    project: z.string().optional(),
    service: z.string(),
    deployment: z.string(),
    stream: z.string(),
    "time_nano": z.string().regex(/^\d{1,20}$/),
    text: z.string(),
    partial: z.boolean().optional(),
  })
);

/** What `ployz.observe.log_history.v1` answers: one Machine's stored output. */
export interface LogHistoryResponse {
  /** The Machine that answered. */
  "machine_id": string;
  /** Its name. */
  "machine_name": string;
  /** Matching lines, oldest first. */
  lines: LogLineWire[];
  /** Older lines in the window were left out by `limit`. */
  truncated: boolean;
  /** Plain statements about what the answer cannot show (e.g. no output of that Service here). */
  notes: string[];
}

/** Tolerant reader of {@link LogHistoryResponse}. */
export const LogHistoryResponseSchema: z.ZodType<LogHistoryResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string(),
    "machine_name": z.string(),
    lines: z.array(LogLineSchema).max(MAX_LOG_LINES),
    truncated: z.boolean(),
    notes: z.array(z.string()).default([]),
  })
);

/** What `ployz.observe.tail_logs.v1` asks. */
export interface TailLogsRequest {
  /** Whose output. */
  selector: LogSelectorWire;
  /** Start with stored lines at or after this time (up to `backlog`); default only new lines. */
  since?: string;
  /** How many earlier lines to send first when `since` is given; default 100. */
  backlog?: number;
  /** Only lines containing this text (plain, case-sensitive). */
  grep?: string;
  /** Opt in to `heartbeat` frames (about every 5 s), so a caller can tell a quiet Machine from a gone one. */
  heartbeat?: boolean;
}

/** Reader of {@link TailLogsRequest}; fields it does not know are ignored. */
export const TailLogsRequestSchema: z.ZodType<TailLogsRequest> = z.lazy(() =>
  z.object({
    selector: LogSelectorSchema,
    since: time.optional(),
    backlog: z.number().int().min(0).max(MAX_LOG_LINES).optional(),
    grep: z.string().max(1024).optional(),
    heartbeat: z.boolean().optional(),
  })
);

/** One TailLogs frame: a line, a note, or (opted in) a heartbeat. */
export type TailFrame =
  | ({ type: "line" } & LogLineWire)
  | { type: "note"; message: string }
  | { type: "heartbeat" };

/** Reads one NDJSON frame of a TailLogs stream; `undefined` for a variant this reader does not know. */
export function readTailFrame(value: unknown): TailFrame | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const type = (value as { type?: unknown }).type;
  if (type === "heartbeat") return { type };
  if (type === "note") {
    const message = (value as { message?: unknown }).message;
    return typeof message === "string" ? { type, message } : undefined;
  }
  if (type === "line") {
    const line = LogLineSchema.safeParse(value);
    return line.success ? { ...line.data, type } : undefined;
  }
  return undefined;
}

/** What `ployz.observe.metric_history.v1` asks: a Service's (or the Machine's own) metrics over a window. */
export interface MetricHistoryRequest {
  /** `ployz.project`. */
  project?: string;
  /** `ployz.service`. */
  service?: string;
  /** `ployz.deployment`: one series per Deployment instead of per Service. */
  deployment?: string;
  /** The Machine's own series; takes no other selector. */
  machine?: true;
  /** Window start: nanoseconds since the epoch as a decimal string, or RFC 3339. */
  since: string;
  /** Window end (exclusive); default now. */
  until?: string;
  /** Point width in whole seconds; rounded up to the data's resolution. */
  step?: number;
}

/** Reader of {@link MetricHistoryRequest}; fields it does not know are ignored. */
export const MetricHistoryRequestSchema: z.ZodType<MetricHistoryRequest> = z.lazy(() =>
  z.object({
    project: label.optional(),
    service: label.optional(),
    deployment: label.optional(),
    machine: z.literal(true).optional(),
    since: time,
    until: time.optional(),
    step: z.number().int().min(1).max(90 * 24 * 3600).optional(),
  })
);

/** A metric's value in a point: `{avg, max}` for a gauge, `{sum}` for a delta, or `{gap}` naming why it is absent. */
export type MetricValueWire = { avg: number; max: number } | { sum: number } | { gap: string };

/** One point of a metric series. */
export interface MetricPointWire {
  /** Start of the point, ms since the epoch. */
  "time_ms": number;
  /** Sampling rounds inside. */
  rounds: number;
  /** Subject samples inside; 0 means no sample at all (a gap, never zero). */
  samples: number;
  /** Each metric's value or gap. */
  values: Record<string, MetricValueWire>;
  /** Gap counts inside, by metric and reason. */
  gaps: Record<string, Record<string, number>>;
  /** Marker counts inside (`start`, `die`, `oom`, `health`). */
  markers: Record<string, number>;
}

/** One metric series: a Service, a Deployment, or the Machine. */
export interface MetricSeriesWire {
  /** `service`, `deployment` or `machine`. */
  scope: string;
  /** The Machine the samples came from. */
  "machine_id": string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment` (`""` for a Service series). */
  deployment: string;
  /** Containers whose raw samples it holds. */
  containers: string[];
  /** Metrics each point carries. */
  metrics: string[];
  /** Points, one per step. */
  points: MetricPointWire[];
}

/** One state change of a container. */
export interface MetricMarkerWire {
  /** The round that saw it, ms. */
  "time_ms": number;
  /** When Docker says it happened, ms. */
  "at_ms": number;
  /** `start`, `die`, `oom` or `health`. */
  kind: string;
  /** Docker's container id. */
  "container_id": string;
  /** The container's name. */
  "container_name": string;
  /** `ployz.project`. */
  project: string;
  /** `ployz.service`. */
  service: string;
  /** `ployz.deployment`. */
  deployment: string;
  /** Exit code of a death, status of a health change. */
  detail: string;
}

/** What `ployz.observe.metric_history.v1` answers: one Machine's samples, gaps explicit. */
export interface MetricHistoryResponse {
  /** The Machine that answered. */
  "machine_id": string;
  /** Its name. */
  "machine_name": string;
  /** `raw` samples or 5 minute `rollup`s. */
  source: string;
  /** Window start, aligned down to the step, ms. */
  "since_ms": number;
  /** Window end, ms. */
  "until_ms": number;
  /** Point width, ms. */
  "step_ms": number;
  /** The sampling interval, ms. */
  "sample_ms": number;
  /** The series. */
  series: MetricSeriesWire[];
  /** Markers in the window while raw markers cover it. */
  markers: MetricMarkerWire[];
}

const MetricValueSchema: z.ZodType<MetricValueWire> = z.lazy(() =>
  z.union([
    z.looseObject({ avg: z.number(), max: z.number() }),
    z.looseObject({ sum: z.number() }),
    z.looseObject({ gap: z.string() }),
  ])
);

/** Tolerant reader of {@link MetricHistoryResponse}. */
export const MetricHistoryResponseSchema: z.ZodType<MetricHistoryResponse> = z.lazy(() =>
  z.looseObject({
    "machine_id": z.string(),
    "machine_name": z.string(),
    source: z.string(),
    "since_ms": z.number(),
    "until_ms": z.number(),
    "step_ms": z.number(),
    "sample_ms": z.number(),
    series: z.array(z.looseObject({
      scope: z.string(),
      "machine_id": z.string(),
      project: z.string(),
      service: z.string(),
      deployment: z.string(),
      containers: z.array(z.string()),
      metrics: z.array(z.string()),
      points: z.array(z.looseObject({
        "time_ms": z.number(),
        rounds: z.number(),
        samples: z.number(),
        values: z.record(z.string(), MetricValueSchema),
        gaps: z.record(z.string(), z.record(z.string(), z.number())),
        markers: z.record(z.string(), z.number()),
      })),
    })),
    markers: z.array(z.looseObject({
      "time_ms": z.number(),
      "at_ms": z.number(),
      kind: z.string(),
      "container_id": z.string(),
      "container_name": z.string(),
      project: z.string(),
      service: z.string(),
      deployment: z.string(),
      detail: z.string(),
    })),
  })
);

/** Request and response types of the observe routes, by method name. */
export interface ObserveRouteTypes {
  /** `ployz.observe.log_history.v1`: the Machine's stored container output for a selector and window. */
  logHistory: [LogHistoryRequest, LogHistoryResponse];
  /**
   * `ployz.observe.tail_logs.v1`: the Machine's container output as it is stored, as NDJSON frames, until
   * `options.signal` aborts.
   */
  tailLogs: [TailLogsRequest, ReadableStream<Uint8Array>];
  /**
   * `ployz.observe.metric_history.v1`: the Machine's metric history for a Service, a Deployment or itself.
   */
  metricHistory: [MetricHistoryRequest, MetricHistoryResponse];
}

/** The observe rows, spread into the catalog. */
export const OBSERVE_ROUTES: RouteTable<ObserveRouteTypes> = Object.freeze({
  logHistory: route("ployz.observe.log_history.v1", LogHistoryRequestSchema, LogHistoryResponseSchema),
  tailLogs: route("ployz.observe.tail_logs.v1", TailLogsRequestSchema, "stream"),
  metricHistory: route(
    "ployz.observe.metric_history.v1",
    MetricHistoryRequestSchema,
    MetricHistoryResponseSchema,
  ),
});
