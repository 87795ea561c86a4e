import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { decode as notepackDecode, encode as notepackEncode } from 'notepack.io'
import { decodeMessage, MAX_MESSAGE_DEPTH } from '../isomorphic/msgpack-decode.js'
import { encodeAfter, encodeMessage, messageHead } from '../isomorphic/msgpack-encode.js'

// Tandem's MessagePack codec against notepack.io, the codec of socket.io-msgpack-parser that
// clients of Socket.IO's documented MessagePack parser use: the same bytes out, the same values in,
// and no length a message declares trusted.

/** Values notepack.io encodes in Node: what Tandem and its clients send, and more. */
const { value } = fc.letrec((/** @type {any} */ tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.constant(undefined),
    fc.boolean(),
    fc.integer(),
    fc.maxSafeInteger(),
    fc.double(),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ minLength: 31, maxLength: 300 }),
    fc.uint8Array({ maxLength: 300 }).map(bytes => Buffer.from(bytes)),
    fc.date({ noInvalidDate: true }),
    fc.array(tie('value'), { maxLength: 20 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 20 })
  )
}))

const hex = (/** @type {string} */ text) => Buffer.from(text.replace(/\s/g, ''), 'hex')

/** @param {unknown} value */
const isPlainObject = value => typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype

/**
 * `value` with each invalid Date (a timestamp beyond what a Date holds) as a string: two of them
 * are not deep-equal, their times being NaN.
 * @param {any} value
 * @returns {any}
 */
function comparable (value) {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value
  if (Array.isArray(value)) return value.map(comparable)
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, comparable(v)]))
  return value
}

describe('the MessagePack codec', () => {
  it('writes the bytes notepack.io writes, and reads back what it reads', () => {
    fc.assert(fc.property(value, v => {
      const bytes = encodeMessage(v)
      assert.deepEqual(Buffer.from(bytes), notepackEncode(v))
      assert.deepEqual(decodeMessage(Buffer.from(bytes)), notepackDecode(notepackEncode(v)))
    }), { numRuns: 2000 })
  })

  it('reads every length and form of what notepack.io writes', () => {
    const samples = [
      'x'.repeat(31), 'x'.repeat(32), 'x'.repeat(255), 'x'.repeat(256), 'x'.repeat(70_000), 'é'.repeat(20), '😀',
      Buffer.alloc(255, 1), Buffer.alloc(256, 2), Buffer.alloc(70_000, 3),
      Array.from({ length: 15 }, (_, i) => i), Array.from({ length: 16 }, (_, i) => i), Array.from({ length: 70_000 }, () => 0),
      Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`, i])),
      Object.fromEntries(Array.from({ length: 70_000 }, (_, i) => [`k${i}`, i])),
      127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1,
      -32, -33, -128, -129, -32_768, -32_769, -(2 ** 31), -(2 ** 31) - 1, -(2 ** 53) + 1,
      0.5, -0.25, NaN, Infinity, -Infinity,
      new Date(0), new Date(1_700_000_000_123), new Date(-1), new Date(2 ** 34 * 1000 + 5)
    ]
    for (const sample of samples) {
      const bytes = notepackEncode(sample)
      assert.deepEqual(Buffer.from(encodeMessage(sample)), bytes)
      assert.deepEqual(decodeMessage(bytes), notepackDecode(bytes))
    }
  })

  it('reads the forms only other encoders write as notepack.io reads them', () => {
    const forms = [
      'ca 3f800000', // float 32
      'd0 80', 'd1 8000', 'd2 80000000', 'd3 ffffffff ffffffff', // signed forms of any value
      'cc 05', 'cd 0005', 'ce 00000005', 'cf 00000000 00000005', // unsigned forms of small values
      'd9 03 616263', 'da 0003 616263', 'db 00000003 616263', // longer string forms
      'c4 02 0102', 'c5 0002 0102', 'c6 00000002 0102', // bin
      'dc 0001 01', 'dd 00000001 01', 'de 0001 a161 01', 'df 00000001 a161 01', // long array and map forms
      'c7 03 00 010203', 'c8 0003 00 010203', 'c9 00000003 00 010203', // notepack's ArrayBuffer
      'd4 00 00', // notepack's undefined
      'd4 05 01', 'd5 05 0102', 'd6 05 01020304', 'd8 05' + '00'.repeat(16), 'c7 02 05 0102', // other extensions
      'd7 00 00000000 00000010', // notepack's old Date
      'c7 0c ff 00000001 00000000 00000002', // timestamp 96
      '81 01 02' // a map key that is not a string
    ]
    for (const form of forms) {
      const bytes = hex(form)
      const expected = notepackDecode(bytes)
      assert.deepEqual(decodeMessage(bytes), expected, form)
    }
    const arrayBuffer = decodeMessage(hex('c7 03 00 010203'))
    assert.ok(arrayBuffer instanceof ArrayBuffer)
    assert.deepEqual([...new Uint8Array(/** @type {ArrayBuffer} */ (arrayBuffer))], [1, 2, 3])
  })

  it('reads a __proto__ map key as an own field, never as the prototype', () => {
    const disguised = /** @type {any} */ (decodeMessage(hex('82 a9 5f5f70726f746f5f5f 81 a161 01 a162 02')))
    assert.ok(isPlainObject(disguised))
    assert.deepEqual(Object.keys(disguised), ['__proto__', 'b'])
    assert.deepEqual(Object.getOwnPropertyDescriptor(disguised, '__proto__')?.value, { a: 1 })
    assert.equal(disguised.a, undefined)
  })

  it('refuses a map key that is neither a string nor an integer, without turning it into a property name', () => {
    assert.deepEqual(decodeMessage(hex('83 01 a161 ff a162 cd 0100 a163')), { 1: 'a', '-1': 'b', 256: 'c' })
    const keys = ['c0', 'c3', 'cb 3ff8000000000000', '90', '80', 'c4 00', 'd4 05 01', 'd4 00 00']
    for (const key of keys) {
      assert.throws(() => decodeMessage(hex(`81 ${key} 01`)), /map key is not a string or an integer/, key)
    }
    // A key whose string is Array.prototype.join over the length it declares: a million here, and
    // then the 26 bytes that declare the longest string V8 can make.
    const joined = (/** @type {string} */ length) => hex(`81 82 a9 5f5f70726f746f5f5f 90 a6 6c656e677468 ce ${length} c0`)
    assert.throws(() => decodeMessage(joined('000f4240')), /map key is not a string or an integer/)
    assert.throws(() => decodeMessage(joined('1fffffe8')), /map key is not a string or an integer/)
  })

  it('refuses a length or count the message cannot hold, before allocating anything for it', () => {
    const lying = [
      'c9 ffffffff 00', 'c9 10000000 00', 'db 10000000', 'c6 10000000', 'dd 10000000', 'df 10000000',
      'c4 05 01', 'a5 6162', '92 01', '82 a161 01', 'dc 0003 01 02', 'd7 ff 0000', 'cb 3ff0', 'cd 01', 'd8 05 00'
    ]
    // The decoder's own refusal, not a failed allocation (a 4 GiB ArrayBuffer throws a RangeError).
    for (const form of lying) {
      assert.throws(() => decodeMessage(hex(form)), /declared length exceeds the message|truncated message/, form)
    }
  })

  it('refuses a message that is empty, malformed, followed by more bytes or nested too deep', () => {
    assert.throws(() => decodeMessage(new Uint8Array(0)), /truncated message/)
    assert.throws(() => decodeMessage(hex('c1')), /invalid message byte/)
    assert.throws(() => decodeMessage(hex('01 02')), /trailing bytes after the message/)
    const nested = (/** @type {number} */ depth) => hex('91'.repeat(depth) + '01')
    assert.deepEqual(decodeMessage(nested(MAX_MESSAGE_DEPTH)), JSON.parse('['.repeat(MAX_MESSAGE_DEPTH) + '1' + ']'.repeat(MAX_MESSAGE_DEPTH)))
    assert.throws(() => decodeMessage(nested(MAX_MESSAGE_DEPTH + 1)), /nested too deep/)
    assert.throws(() => decodeMessage(hex('81 a0'.repeat(40) + '01')), /nested too deep/)
  })

  it('reads any bytes notepack.io reads as it does, and refuses with an Error what it cannot read', () => {
    const message = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc.tuple(value, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 3 }), fc.nat()).map(([v, changes, cut]) => {
        const bytes = Buffer.from(notepackEncode(v))
        for (const [at, byte] of changes) if (bytes.length > 0) bytes[at % bytes.length] = byte
        return bytes.subarray(0, bytes.length === 0 ? 0 : cut % (bytes.length + 1))
      })
    )
    fc.assert(fc.property(message, bytes => {
      let decoded
      try {
        decoded = decodeMessage(Buffer.from(bytes))
      } catch (err) {
        assert.ok(err instanceof Error)
        return
      }
      let expected
      try {
        expected = notepackDecode(Buffer.from(bytes))
      } catch {
        // notepack.io reads 12 bytes for any timestamp of ext 8, whatever length it declares.
        return
      }
      assert.deepEqual(comparable(decoded), comparable(expected))
    }), { numRuns: 3000 })
    assert.deepEqual(decodeMessage(hex('c7 01 ff 05')), [-1, Buffer.of(5)])
  })

  it('hands out messages that later encodings leave intact, large ones included', () => {
    const messages = []
    for (let i = 0; i < 3000; i++) {
      const v = i % 500 === 0 ? { big: Buffer.alloc(20_000, i % 256) } : { i, text: `message ${i}` }
      messages.push({ v, bytes: encodeMessage(v) })
    }
    for (const { v, bytes } of messages) assert.deepEqual(Buffer.from(bytes), notepackEncode(v))
  })

  it('writes a message from a template\'s head and its last value as it writes the whole message', () => {
    const LAST = '\u0000last'
    const kept = value.filter(v => v !== undefined)
    fc.assert(fc.property(
      fc.array(value, { maxLength: 20 }),
      fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 20 }),
      fc.array(kept, { minLength: 1, maxLength: 5 }),
      (items, entries, lasts) => {
        const inArray = messageHead([...items, null])
        const inMap = messageHead({ ...entries, [LAST]: null })
        for (const last of lasts) {
          assert.deepEqual(Buffer.from(encodeAfter(inArray, last)), notepackEncode([...items, last]))
          assert.deepEqual(Buffer.from(encodeAfter(inMap, last)), notepackEncode({ ...entries, [LAST]: last }))
        }
      }
    ), { numRuns: 300 })
    assert.throws(() => messageHead({ last: 1 }), /last value is not null/)
    assert.throws(() => encodeAfter(messageHead([null]), undefined), /cannot encode a undefined/)
  })

  it('refuses what it cannot encode, and encodes the next value as if nothing happened', () => {
    assert.throws(() => encodeMessage({ a: 1n }), /cannot encode a bigint/)
    assert.throws(() => encodeMessage([Symbol('s')]), /cannot encode a symbol/)
    assert.throws(() => encodeMessage({ toJSON: () => encodeMessage(1) }), /not reentrant/)
    assert.deepEqual(Buffer.from(encodeMessage({ ok: true })), notepackEncode({ ok: true }))
  })
})
