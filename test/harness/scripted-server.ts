/**
 * A real HTTP server that answers from a script, for transport tests that need exact sequences
 * (429, 429, 200; a reset; an HTML error page). Protocol behaviour of the actual API is tested
 * against the emulator instead.
 */
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';

export interface SeenRequest {
	method: string;
	url: string;
	headers: Record<string, string | string[] | undefined>;
	body: unknown;
	/** Arrival time in ms, to check waits such as Retry-After. */
	at: number;
}

export type Handler = (request: FastifyRequest, reply: FastifyReply) => unknown;

export interface ScriptedServer {
	url: string;
	/** Every request received, in order. */
	seen: SeenRequest[];
	/** Queues handlers for `METHOD /path`; each request consumes one, the last one repeats. */
	script(route: string, ...handlers: Handler[]): void;
	close(): Promise<void>;
}

export async function startScriptedServer(): Promise<ScriptedServer> {
	const app = Fastify();
	const scripts = new Map<string, Handler[]>();
	const seen: SeenRequest[] = [];
	app.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
	app.all('/*', async (request, reply) => {
		const path = request.url.split('?')[0];
		seen.push({
			method: request.method,
			url: request.url,
			headers: request.headers,
			body: request.body,
			at: Date.now(),
		});
		const queue = scripts.get(`${request.method} ${path}`);
		if (!queue?.length)
			return reply.code(599).send({ error: { code: 'unscripted', message: path } });
		const handler = queue.length > 1 ? queue.shift()! : queue[0];
		return handler(request, reply);
	});
	await app.listen({ port: 0, host: '127.0.0.1' });
	const address = app.server.address();
	const port = typeof address === 'object' && address ? address.port : 0;
	return {
		url: `http://127.0.0.1:${port}`,
		seen,
		script: (route, ...handlers) => scripts.set(route, handlers),
		close: async () => {
			await app.close();
		},
	};
}

/** An API error body as the service sends it. */
export function apiErrorBody(code: string, message = '错误', requestId = 'req_test') {
	return { error: { code, message, request_id: requestId } };
}
