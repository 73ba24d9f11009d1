/**
 * Terminal plots of a series with block characters. A gap is drawn as a blank column, while a zero is the
 * lowest block, so a value that could not be read never looks like zero.
 *
 * @module
 */

const BLOCKS = ["▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"];

/** Options of {@link renderPlot}. */
export interface PlotOptions {
  /** Rows. Default 4. */
  height?: number;
  /** The value of a full column. Default the largest value (1 when all are 0). */
  max?: number;
}

/** One line of blocks, one per value; `undefined` (a gap) is a space. */
export function sparkline(values: (number | undefined)[], max?: number): string {
  return renderPlot(values, { height: 1, max })[0];
}

/** Rows of blocks, top first, one column per value; `undefined` (a gap) is a blank column. */
export function renderPlot(values: (number | undefined)[], options: PlotOptions = {}): string[] {
  const height = Math.max(1, Math.floor(options.height ?? 4));
  const top = options.max ?? Math.max(0, ...values.filter((v): v is number => v !== undefined));
  const scale = top > 0 ? top : 1;
  // Eighths of a row each column fills; a readable value is at least one eighth.
  const fills = values.map((v) =>
    v === undefined
      ? undefined
      : Math.max(1, Math.round((Math.min(Math.max(v, 0), scale) / scale) * height * 8))
  );
  const rows: string[] = [];
  for (let row = height - 1; row >= 0; row--) {
    rows.push(
      fills.map((f) => {
        if (f === undefined) return " ";
        const inRow = f - row * 8;
        if (inRow <= 0) return row === 0 ? BLOCKS[0] : " ";
        return BLOCKS[Math.min(8, inRow) - 1];
      }).join(""),
    );
  }
  return rows;
}
