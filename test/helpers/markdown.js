/**
 * Rows of the first markdown table after `heading`, as arrays of trimmed cell texts.
 * @param {string} markdown
 * @param {string} heading
 */
export function tableAfter (markdown, heading) {
  const lines = markdown.slice(markdown.indexOf(heading)).split('\n')
  const start = lines.findIndex(line => line.startsWith('|'))
  const rows = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break
    rows.push(line.split('|').slice(1, -1).map(cell => cell.trim()))
  }
  return rows
}
