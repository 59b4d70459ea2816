// The testbed's event-loop service, instrumented with the OpenTelemetry JS
// SDK: its spans are the ground truth for this tier.
//
//   NODE_PATH=CACHE/node_modules node evloop.js LISTEN TPR POOL SPANS [TPR2]
//
// One thread serves every request: for each it calls the thread-per-request
// service and, seven times in ten, the worker-pool service, both over
// kept-alive connection pools, so calls of overlapping requests share
// connections and one thread.  With TPR2 (a fan-out), every request then
// calls the worker pool and TPR2 at once, both in flight together: three
// services a request, two of its calls overlapping.  The SDK's HTTP instrumentation makes a
// server span per request and a client span per call, parented by the
// SDK's own context propagation; a request hook adds each span's
// connection ends (client and server address:port), which the SDK does not
// record for client spans, and a start time in nanoseconds: the SDK stamps
// a span's start with Date.now(), whole milliseconds, too coarse to find
// the request on a busy connection (the hook's clock is hrtime).  Finished spans go to SPANS as JSON lines.
'use strict';
const fs = require('fs');
const {NodeTracerProvider} = require('@opentelemetry/sdk-trace-node');
const {SimpleSpanProcessor} = require('@opentelemetry/sdk-trace-base');
const {registerInstrumentations} = require('@opentelemetry/instrumentation');
const {HttpInstrumentation} = require('@opentelemetry/instrumentation-http');

const [listen, tpr, pool, spansPath, tpr2] = process.argv.slice(2);
const out = fs.createWriteStream(spansPath);
const ns = (t) => (BigInt(t[0]) * 1000000000n + BigInt(t[1])).toString();

class FileExporter {
	export(spans, done) {
		for (const s of spans) {
			const c = s.spanContext();
			out.write(JSON.stringify({
				traceId: c.traceId,
				spanId: c.spanId,
				parentSpanId: s.parentSpanId || '',
				kind: s.kind,
				start: s.attributes['cw.start_ns'] || ns(s.startTime),
				sdkStart: ns(s.startTime),
				end: ns(s.endTime),
				client: s.attributes['cw.client'] || '',
				server: s.attributes['cw.server'] || '',
			}) + '\n');
		}
		done({code: 0});
	}
	shutdown() {
		return new Promise((r) => out.end(r));
	}
}

const provider = new NodeTracerProvider();
provider.addSpanProcessor(new SimpleSpanProcessor(new FileExporter()));
provider.register();

// Anchored on a tick of Date.now(), so the hook's times are the wall clock
// to a few microseconds, like the capture's.  The tick falls between two
// hrtime reads; a preemption between them (a busy machine) would shift the
// anchor by as long, so the narrowest of 50 ticks is kept.
const anchor = (() => {
	let best = null, width = 0n;
	for (let i = 0; i < 50; i++) {
		let lo = process.hrtime.bigint(), d0 = Date.now(), d, hi;
		for (;;) {
			const before = process.hrtime.bigint();
			d = Date.now();
			hi = process.hrtime.bigint();
			if (d !== d0)
				break;
			lo = before;
		}
		if (best === null || hi - lo < width) {
			width = hi - lo;
			best = BigInt(d) * 1000000n - (lo + hi) / 2n;
		}
	}
	process.stderr.write('evloop: clock anchored within ' + width + ' ns\n');
	return best;
})();
const ends = (span, s, server) => {
	const a = s.remoteAddress + ':' + s.remotePort;
	const b = s.localAddress + ':' + s.localPort;
	span.setAttribute('cw.client', server ? a : b);
	span.setAttribute('cw.server', server ? b : a);
};

registerInstrumentations({
	instrumentations: [new HttpInstrumentation({
		requestHook(span, req) {
			span.setAttribute('cw.start_ns',
				(anchor + process.hrtime.bigint()).toString());
			if (req.constructor.name === 'IncomingMessage') {
				ends(span, req.socket, true);
				return;
			}
			// A call waiting in the agent's queue (maxSockets) is
			// written only once a socket is handed to it: its start is
			// then, or the truth would name the first call that socket
			// carried after the call was made, an older request's.
			req.on('socket', (s) => {
				span.setAttribute('cw.start_ns',
					(anchor + process.hrtime.bigint()).toString());
				if (s.remotePort)
					ends(span, s, false);
				else
					s.once('connect', () => ends(span, s, false));
			});
		},
	})],
});

// Required after the instrumentation is registered, so it is patched.
const http = require('http');

const target = (hp) => {
	const i = hp.lastIndexOf(':');
	return {host: hp.slice(0, i), port: +hp.slice(i + 1),
		agent: new http.Agent({keepAlive: true, maxSockets: 6})};
};
const tiers = [target(tpr), target(pool)].concat(tpr2 ? [target(tpr2)] : []);

function call(t, path, done) {
	const req = http.get({host: t.host, port: t.port, path, agent: t.agent},
		(res) => {
			res.on('data', () => {});
			res.on('end', () => done(null));
		});
	req.on('error', done);
}

const [lhost, lport] = [listen.slice(0, listen.lastIndexOf(':')),
	+listen.slice(listen.lastIndexOf(':') + 1)];
http.createServer((req, res) => {
	req.on('data', () => {});
	const fail = (e) => {
		res.statusCode = 502;
		res.end(String(e));
	};
	call(tiers[0], '/user', (e) => {
		if (e)
			return fail(e);
		if (tiers[2]) { // fan-out: pool and tpr2 in flight together
			let left = 2, failed = false;
			const both = (e2) => {
				if (failed)
					return;
				if (e2) {
					failed = true;
					return fail(e2);
				}
				if (--left === 0)
					res.end('evloop ok\n');
			};
			call(tiers[1], '/stock', both);
			call(tiers[2], '/price', both);
			return;
		}
		if (Math.random() >= 0.7)
			return res.end('evloop ok (cached)\n');
		call(tiers[1], '/stock', (e2) => {
			if (e2)
				return fail(e2);
			res.end('evloop ok\n');
		});
	});
}).listen(lport, lhost);

const stop = () => provider.shutdown().then(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
