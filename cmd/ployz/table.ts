// The one way ployz prints a table: left-aligned columns, two spaces apart, no trailing blanks.

/** `header` and `rows` as left-aligned columns two spaces apart; a row shorter than the header ends early. */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  return [line(header), ...rows.map(line)].join("\n") + "\n";
}
