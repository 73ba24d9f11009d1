// How ployz prints sizes: one way for every command.

/** `bytes` in decimal megabytes, one decimal: "12.3 MB". */
export function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** `bytes` in binary mebibytes, one decimal ("12.3MiB"), or "-" when unknown. */
export function mib(bytes: number | undefined): string {
  return bytes === undefined ? "-" : `${(bytes / 2 ** 20).toFixed(1)}MiB`;
}
