/** API errors and the localized texts of the emulator (the API's error messages are always Chinese). */

export class ApiError extends Error {
	constructor(
		readonly status: number,
		readonly code: string,
		message: string,
		/** Name of the offending request parameter, on 400 parameter errors. */
		readonly param?: string,
		readonly headers: Record<string, string> = {},
	) {
		super(message);
	}
}

export type Language = 'zh' | 'en';

/**
 * Picks the language of warning details and the default session title from Accept-Language:
 * the highest-q entry among zh and en wins; anything else (or no header) falls back to Chinese.
 */
export function languageOf(acceptLanguage: string | undefined): Language {
	if (!acceptLanguage) return 'zh';
	let best: { lang: Language; q: number } | undefined;
	for (const part of acceptLanguage.split(',')) {
		const [tag, ...params] = part.trim().toLowerCase().split(';');
		const qParam = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
		const q = qParam ? Number(qParam.slice(2)) : 1;
		const lang: Language | undefined = tag.startsWith('en') ? 'en' : tag.startsWith('zh') ? 'zh' : undefined;
		if (lang && q > 0 && (!best || q > best.q)) best = { lang, q };
	}
	return best?.lang ?? 'zh';
}

export const SESSION_TITLE: Record<Language, string> = { zh: 'API生成', en: 'API generation' };

/** Default error code for an injected status fault. */
export const CODE_FOR_STATUS: Record<number, string> = {
	400: 'invalid_request',
	401: 'invalid_api_key',
	402: 'insufficient_credits',
	403: 'insufficient_scope',
	404: 'not_found',
	408: 'request_timeout',
	409: 'conflict',
	429: 'rate_limited',
	500: 'internal_error',
	502: 'bad_gateway',
	503: 'service_unavailable',
	504: 'gateway_timeout',
};

export const MESSAGE_FOR_CODE: Record<string, string> = {
	invalid_request: '请求参数无效。',
	invalid_api_key: 'API 密钥无效、已吊销或已过期。',
	unauthorized: '缺少 API 密钥：请在 Authorization 请求头中以 Bearer 方式提供。',
	insufficient_credits: '积分不足，请充值后重试。',
	insufficient_scope: '该 API 密钥没有访问此接口所需的权限。',
	not_found: '请求的资源不存在。',
	request_timeout: '请求超时。',
	conflict: '请求冲突，请稍后重试。',
	rate_limited: '请求过于频繁，请稍后重试。',
	internal_error: '服务内部错误，请稍后重试。',
	bad_gateway: '上游服务异常，请稍后重试。',
	service_unavailable: '服务暂时不可用，请稍后重试。',
	gateway_timeout: '上游服务超时，请稍后重试。',
};

export function errorBody(err: ApiError, requestId: string): Record<string, unknown> {
	const error: Record<string, unknown> = { code: err.code, message: err.message, request_id: requestId };
	if (err.param !== undefined) error.param = err.param;
	return { error };
}

/** JSON.parse without exceptions (so callers can answer with their own error). */
export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
	try {
		return { ok: true, value: JSON.parse(text) };
	} catch {
		return { ok: false };
	}
}
