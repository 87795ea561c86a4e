// A markdown table, shared by every markdown the load test writes.

/**
 * @param {string[]} headers
 * @param {(string | number)[][]} rows
 */
export function table (headers, rows) {
  const line = (/** @type {(string | number)[]} */ cells) => `| ${cells.join(' | ')} |`
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n')
}
