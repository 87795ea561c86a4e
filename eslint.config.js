import neostandard from 'neostandard'

export default [
  ...neostandard({ ignores: ['node_modules/**', 'data/**', '.tmp/**', 'client/dist/**', 'reports/**', 'types/**'] })
]
