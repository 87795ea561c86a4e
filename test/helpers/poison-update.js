// An update that decodes cleanly, then makes Yjs throw ("Unexpected case") halfway through applying
// it, after inserting "mm", to a document holding exactly BASE's history. Found by mutating real
// updates; the server must refuse it and reload the document from storage.

export const BASE = [
  '01010100040107636f6e74656e740b68656c6c6f20776f726c6400',
  '0101010bc4010201030361626300',
  '000101010102',
  '0101010ec401030104015100',
  '0101010f440100015a00'
].map(hex => new Uint8Array(Buffer.from(hex, 'hex')))

export const POISON = new Uint8Array(Buffer.from('01020200c4010c010d026d6dc402050106027a7a01010300030b010f01', 'hex'))

/** The text of a document holding BASE. */
export const BASE_TEXT = 'ZhabclQo world'
