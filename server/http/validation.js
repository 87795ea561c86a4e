import { z } from 'zod'
import { httpUrl } from '../config.js'
import { AppError } from '../errors.js'
import { DOC_ID_PATTERN } from '../../isomorphic/ids.js'

// REST payload schemas. Unknown fields are refused (strict), so a typo is a 400, not a silent no-op.

const name = z.string().trim().min(1).max(200)
const language = z.string().regex(/^[a-z0-9+#._-]{1,40}$/, 'a lowercase language id such as `javascript`')
const maxEditors = z.number().int().min(1).max(10000)
// `null` clears it. Only http(s): the server sends requests to it.
const webhookUrl = z.string().max(2048).transform((raw, ctx) => {
  try {
    return httpUrl(raw)
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: /** @type {Error} */ (err).message })
    return z.NEVER
  }
}).nullable()

export const createSessionBody = z.object({
  name,
  language: language.optional(),
  maxEditors: maxEditors.optional(),
  content: z.string().optional(),
  webhookUrl: webhookUrl.optional()
}).strict()

export const updateSessionBody = z.object({
  name: name.optional(),
  language: language.optional(),
  maxEditors: maxEditors.optional(),
  webhookUrl: webhookUrl.optional()
}).strict().refine(body => Object.keys(body).length > 0, 'name at least one field to change')

const user = z.string().trim().min(1).max(100)

/** @param {number} maxTtlSeconds */
export const createTokenBody = maxTtlSeconds => z.object({
  user,
  role: z.enum(['editor', 'viewer']),
  ttl: z.number().int().min(10).max(maxTtlSeconds).optional()
}).strict()

export const revokeTokensQuery = z.object({ user }).strict()

export const listSessionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().regex(DOC_ID_PATTERN).optional()
}).strict()

/** An ISO 8601 time, as ms. */
const time = z.string().max(40).transform((raw, ctx) => {
  const ms = Date.parse(raw)
  if (Number.isNaN(ms)) ctx.addIssue({ code: 'custom', message: 'expected an ISO 8601 time such as 2026-11-29T10:00:00Z' })
  return ms
})
const checkpointName = z.string().trim().min(1).max(100)

export const contentQuery = z.object({
  format: z.enum(['text', 'yjs']).default('text'),
  at: time.optional(),
  checkpoint: checkpointName.optional()
}).strict().refine(query => query.at === undefined || query.checkpoint === undefined, 'give `at` or `checkpoint`, not both')

/** What to bring back: the text at a time, or a checkpoint's. */
export const restoreBody = z.object({ at: time.optional(), checkpoint: checkpointName.optional() }).strict()
  .refine(body => (body.at === undefined) !== (body.checkpoint === undefined), 'give `at` or `checkpoint`, one of them')

export const historyQuery = z.object({ from: time.optional(), to: time.optional() }).strict()

/** @param {number} maxLimit */
export const historyUpdatesQuery = maxLimit => z.object({
  from: time,
  to: time.optional(),
  limit: z.coerce.number().int().min(1).max(maxLimit).default(1000)
}).strict()

export const replaceContentBody = z.object({ text: z.string() }).strict()

const textEdit = z.object({
  at: z.number().int().min(0),
  delete: z.number().int().min(0).default(0),
  insert: z.string().default('')
}).strict()

/** Positions in UTF-16 code units against the text at `revision`; each edit starts where the one before ends, or later. */
export const textEditsBody = z.object({
  revision: z.string().min(1).max(100),
  edits: z.array(textEdit).min(1).max(10_000).superRefine((edits, ctx) => {
    for (let i = 1; i < edits.length; i++) {
      const previous = edits[i - 1]
      if (edits[i].at < previous.at + previous.delete) {
        ctx.addIssue({ code: 'custom', path: [i], message: `starts before edits.${i - 1} ends (${previous.at + previous.delete}): sort the edits, and let none overlap` })
      }
    }
  })
}).strict()

export const checkpointBody = z.object({ name: checkpointName }).strict()

/** @template {z.ZodType} S @param {S} schema @param {unknown} input @returns {z.infer<S>} */
export function parse (schema, input) {
  const result = schema.safeParse(input ?? {})
  if (result.success) return result.data
  const details = result.error.issues.flatMap(issue => issue.code === 'unrecognized_keys'
    ? issue.keys.map(key => ({ field: [...issue.path, key].join('.'), message: 'unknown field' }))
    : [{ field: issue.path.join('.'), message: issue.message }])
  throw new AppError('BAD_REQUEST', 'invalid request', details)
}
