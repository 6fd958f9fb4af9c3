// SPDX-License-Identifier: Apache-2.0
// An independent SPDY/3.1 client (npm spdy-transport, its own framer, zlib
// use and dictionary) on stdin/stdout, against the C codec in
// tests/unit/test_spdy_interop.c: a stream with headers, 300 KiB of DATA
// each way (more than the 64 KiB initial window, so it only completes if
// our WINDOW_UPDATEs are right), FIN, a PING, GOAWAY. Prints "ok ..." on
// stderr and exits 0, or says what went wrong and exits 1.
'use strict'
const transport = require(process.env.SPDY_TRANSPORT)
const { Duplex } = require('stream')

function fail (msg) {
  process.stderr.write('interop: ' + msg + '\n')
  process.exit(1)
}
setTimeout(() => fail('timed out'), 20000).unref()

const sock = new Duplex({
  read () {},
  write (chunk, enc, cb) { process.stdout.write(chunk, cb) }
})
process.stdin.on('data', (d) => sock.push(d))
process.stdin.on('end', () => sock.push(null))

const conn = transport.connection.create(sock, {
  protocol: 'spdy', isServer: false, windowSize: 64 << 10
})
conn.start(3.1)
conn.on('error', (e) => fail('connection: ' + e.message))

const size = 300 << 10
const payload = Buffer.alloc(size)
for (let i = 0; i < size; i++) payload[i] = (i * 7 + (i >> 8)) & 0xff

const stream = conn.request({
  method: 'POST',
  path: '/exec/ns/pod/c',
  headers: { StreamType: 'stdin', 'X-Several': ['one', 'two'] }
}, (err) => { if (err) fail('request: ' + err.message) })

const got = []
stream.on('error', (e) => fail('stream: ' + e.message))
stream.on('response', (code, headers) => {
  if (code !== 200) fail('status ' + code)
  if (headers['x-echo'] !== 'stdin') fail('x-echo: ' + JSON.stringify(headers))
})
stream.on('data', (d) => got.push(d))
stream.on('end', () => {
  const all = Buffer.concat(got)
  if (all.length !== size) fail('echo of ' + all.length + ' bytes, sent ' + size)
  if (!all.equals(payload)) fail('echo differs')
  conn.ping((err) => {
    if (err) fail('ping: ' + err.message)
    conn.end(() => {
      process.stderr.write('ok ' + size + ' bytes each way, ping answered\n')
      process.exit(0)
    })
  })
})
stream.end(payload)
