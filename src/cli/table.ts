/** Rows as aligned columns, two spaces apart, the first row the header; an empty cell shows as `-`. */
export function table(rows: string[][]): string {
  const cells = rows.map((row) => row.map((cell) => (cell === '' ? '-' : cell)));
  const widths = cells[0].map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}
