import { access } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'

// Test data that is not ours to ship (the editing traces are Joseph Gentle's, CC BY 4.0) lives next to
// the repository, never in it. A fresh clone without it skips the suites that need it; CI must have it.
const SHARED_TRACES = fileURLToPath(new URL('../../../shared/traces/', import.meta.url))
const SOURCE = 'https://github.com/josephg/editing-traces (sequential_traces/)'

/**
 * Where an editing trace is: `TRACE_FILE` if set, else `../shared/traces/<file>` beside the repository.
 * `skip` says why and how to get it when it is absent, and is false under `CI=true`, where the suite
 * then runs and fails in `path()`. A `TRACE_FILE` that does not exist is always a failure: it was asked for.
 * @param {string} file name in the shared traces folder, e.g. `sveltecomponent.json.gz`
 */
export async function traceFixture (file) {
  const fromEnv = process.env.TRACE_FILE
  const candidate = fromEnv || SHARED_TRACES + file
  const found = await access(candidate).then(() => true, () => false)
  const howTo = `trace ${candidate} not found: download ${file} from ${SOURCE} into ../shared/traces/ ` +
    '(beside the repository) or set TRACE_FILE to its path'
  const required = Boolean(fromEnv) || process.env.CI === 'true'
  return {
    /** @type {string | false} */
    skip: found || required ? false : howTo,
    /** The trace's path; throws when it is missing (under CI, or when TRACE_FILE names it). */
    path () {
      if (!found) throw new Error(howTo)
      return candidate
    }
  }
}
