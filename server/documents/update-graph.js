import * as Y from 'yjs'
import { AppError } from '../errors.js'

/** @typedef {{ rootTypes: ReadonlySet<string>, maxTypeDepth: number }} GraphLimits as in config.js */

/**
 * Checks that an update's items point at structs the document has or earlier ones of the update,
 * into an allowed root type, at most `maxTypeDepth` deep. A missing reference is OUT_OF_SYNC; a
 * self-reference or cycle never integrates (Yjs throws on some halfway): INVALID_UPDATE.
 * @param {Array<Y.Item | Y.GC | Y.Skip>} structs grouped by client, each client's in clock order
 * @param {Y.Doc} ydoc @param {GraphLimits} limits
 */
export function checkReferences (structs, ydoc, { rootTypes, maxTypeDepth }) {
  /** @type {Map<number, number[]>} indices of each client's structs, in clock order */
  const byClient = new Map()
  // The index of the struct of the same client just before each one, or -1.
  const previous = new Int32Array(structs.length).fill(-1)
  structs.forEach((struct, index) => {
    if (struct instanceof Y.Skip) return
    const list = byClient.get(struct.id.client)
    if (!list) {
      byClient.set(struct.id.client, [index])
      return
    }
    previous[index] = list[list.length - 1]
    list.push(index)
  })

  /** The index of this update's struct holding `id`, or -1 when the document holds it. @param {Y.ID} id */
  const indexOf = id => {
    if (id.clock < Y.getState(ydoc.store, id.client)) return -1
    const list = byClient.get(id.client) ?? []
    let low = 0
    let high = list.length - 1
    while (low <= high) {
      const middle = (low + high) >> 1
      const { clock } = structs[list[middle]].id
      if (id.clock < clock) high = middle - 1
      else if (id.clock >= clock + structs[list[middle]].length) low = middle + 1
      else return list[middle]
    }
    throw outOfSync()
  }

  /** @param {number} index the structs `index` must come after */
  const dependencies = index => {
    const struct = structs[index]
    const after = previous[index] === -1 ? [] : [previous[index]]
    if (struct instanceof Y.Item) {
      for (const id of [struct.origin, struct.rightOrigin, struct.parent instanceof Y.ID ? struct.parent : null]) {
        if (id === null) continue
        const dependency = indexOf(id)
        if (dependency !== -1) after.push(dependency)
      }
    }
    return after
  }

  // Depth of the type each struct sits in (a root type is 0), known once its dependencies are.
  const depths = new Int32Array(structs.length)
  /** @param {Y.ID} id */
  const depthAt = id => {
    const index = indexOf(id)
    if (index !== -1) return depths[index]
    const item = Y.getItem(ydoc.store, id)
    return item instanceof Y.Item ? typeDepth(item.parent) : 0
  }
  /** @param {Y.ID} id the item holding a type */
  const depthInside = id => {
    const index = indexOf(id)
    const item = index === -1 ? Y.getItem(ydoc.store, id) : structs[index]
    if (!(item instanceof Y.Item)) return 0 // a collected parent: Yjs drops its children
    if (!(item.content instanceof Y.ContentType)) throw invalid('an item\'s parent is not a type')
    return index === -1 ? typeDepth(item.content.type) : depths[index] + 1
  }
  /** @param {Y.Item} item */
  const depthOf = item => {
    // A decoded item names its root type by a string (Yjs' typings do not say so).
    const parent = /** @type {unknown} */ (item.parent)
    if (typeof parent === 'string') {
      if (!rootTypes.has(parent)) throw invalid(`root type ${JSON.stringify(parent.slice(0, 64))} is not allowed`)
      return 0
    }
    if (item.parent instanceof Y.ID) return depthInside(item.parent)
    const neighbour = item.origin ?? item.rightOrigin
    return neighbour === null ? 0 : depthAt(neighbour)
  }
  /** How deep a type of the document nests, counted up to just past the limit. @param {any} type */
  const typeDepth = type => {
    let depth = 0
    for (let item = type?._item; item && depth <= maxTypeDepth; item = item.parent?._item) depth++
    return depth
  }

  // Depth-first over the dependencies (at most four each): 1 = on the current path, 2 = done.
  const marks = new Uint8Array(structs.length)
  for (let start = 0; start < structs.length; start++) {
    if (marks[start] !== 0 || structs[start] instanceof Y.Skip) continue
    marks[start] = 1
    const path = [{ index: start, after: dependencies(start) }]
    while (path.length > 0) {
      const top = path[path.length - 1]
      const next = top.after.pop()
      if (next === undefined) {
        path.pop()
        marks[top.index] = 2
        const struct = structs[top.index]
        if (!(struct instanceof Y.Item)) continue
        depths[top.index] = depthOf(struct)
        if (struct.content instanceof Y.ContentType && depths[top.index] + 1 > maxTypeDepth) {
          throw new AppError('TOO_LARGE', `types may nest at most ${maxTypeDepth} deep`)
        }
      } else if (marks[next] === 1) {
        throw invalid('the update\'s structs reference each other in a cycle')
      } else if (marks[next] === 0) {
        marks[next] = 1
        path.push({ index: next, after: dependencies(next) })
      }
    }
  }
}

/** @param {string} reason */
function invalid (reason) {
  return new AppError('INVALID_UPDATE', `update is not valid: ${reason}`)
}

export function outOfSync () {
  return new AppError('OUT_OF_SYNC', 'the update builds on changes the server does not have; join again to resync')
}
