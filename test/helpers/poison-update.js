// Updates found by mutating real ones, for a document holding exactly BASE's history:
// - POISON decodes cleanly and carries only a delete set, of clocks of a client the document lacks;
//   Yjs throws ("Unexpected case") while applying it. The server refuses it before applying.
// - MISSING_DEPENDENCY inserts "mm" and then an item whose origin is a struct nobody sent; Yjs would
//   hold the rest as pending (and once threw halfway through it). The server refuses it unapplied.

export const BASE = [
  '01010100040107636f6e74656e740b68656c6c6f20776f726c6400',
  '0101010bc4010201030361626300',
  '000101010102',
  '0101010ec401030104015100',
  '0101010f440100015a00'
].map(hex => new Uint8Array(Buffer.from(hex, 'hex')))

export const POISON = new Uint8Array(Buffer.from('0001000344010f017800', 'hex'))

export const MISSING_DEPENDENCY = new Uint8Array(Buffer.from('01020200c4010c010d026d6dc402050106027a7a01010300030b010f01', 'hex'))

/** The text of a document holding BASE. */
export const BASE_TEXT = 'ZhabclQo world'
