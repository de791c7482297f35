// The checks the SDK scripts make: each prints "ok NAME" or "FAIL NAME:
// why"; finish ends the script, with status 1 if one failed, and says "all
// checks passed" otherwise, which the Go test looks for.
import { createHash } from 'node:crypto'

let failures = 0

export function check(name, ok, detail) {
  if (ok) {
    console.log(`ok ${name}`)
  } else {
    failures++
    console.log(`FAIL ${name}: ${detail}`)
  }
}

export function eq(name, got, want) {
  check(name, JSON.stringify(got) === JSON.stringify(want), `got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`)
}

export async function throws(name, fn, cls) {
  try {
    await fn()
    check(name, false, 'did not throw')
  } catch (err) {
    check(name, err instanceof cls, `threw ${err && err.constructor && err.constructor.name}: ${err && err.message}`)
  }
}

export const sha256 = (b) => createHash('sha256').update(b).digest('hex')

export function finish() {
  if (failures > 0) {
    console.log(`${failures} checks failed`)
    process.exit(1)
  }
  console.log('all checks passed')
}
