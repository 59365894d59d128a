#!/usr/bin/env node
// The `concord` command: registers tsx (TypeScript) in this process, loads
// the Node 20 shim first (shim/node20.ts), then runs cli/main.ts. Works from
// the project folder (`npx concord`) and from an installed package (tsx is a
// dependency). Signals reach the command directly (serve shuts down cleanly).
import { register } from 'tsx/esm/api'

register()
await import('../shim/node20.ts')
await import('./main.ts')
