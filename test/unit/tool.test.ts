import { MODELS, creditsPerImage } from '../../nodes/ImagePack/shared/catalog';
import { TOOL_DESCRIPTIONS, toolErrorText } from '../../nodes/ImagePack/actions/tool';

describe('tool descriptions', () => {
	it('stay under 1024 characters, the smallest limit model APIs put on a tool description', () => {
		for (const text of Object.values(TOOL_DESCRIPTIONS)) expect(text.length).toBeLessThan(1024);
	});

	it('Generate lists every model with the prices the catalog charges', () => {
		const text = TOOL_DESCRIPTIONS.generate;
		for (const model of MODELS) {
			const line = new RegExp(`${model.id.replace(/\./g, '\\.')}[ ,][^;]*`).exec(text)?.[0];
			expect(line).toBeDefined();
			expect(line).toContain(`up to ${model.referenceLimit} references`);
			if (model.price.by === 'resolution') {
				const prices = model.resolutions.map((resolution) =>
					creditsPerImage(model, { resolution, referenceCount: 0 }),
				);
				expect(line).toContain(`${prices.join('/')} at ${model.resolutions.join('/')}`);
			} else {
				const prices = (['low', 'medium', 'high'] as const).map((quality) =>
					creditsPerImage(model, { resolution: '', quality, referenceCount: 0 }),
				);
				expect(line).toContain(`${prices.join('/')} at low/medium/high quality`);
			}
		}
		expect(text).toMatch(/pass their images\[\]\.id as reference image ids and their session_id/);
	});
});

describe('toolErrorText', () => {
	const base = {
		operation: 'generate',
		charge: 'not_sent' as const,
	};

	it('a validation error: nothing sent, what to change', () => {
		expect(
			toolErrorText({
				...base,
				reason: 'Number of images "3" is not allowed. Allowed values: 1, 2, 4',
				code: 'invalid_parameter',
			}),
		).toBe(
			'Image generation failed: Number of images "3" is not allowed. Allowed values: 1, 2, 4. Error code: invalid_parameter. Nothing was sent and no credits were used. Correct that argument using the allowed values and call again.',
		);
	});

	it('an API refusal: code, status, not charged, request id, the service message', () => {
		const text = toolErrorText({
			...base,
			reason: 'The session does not exist or belongs to another account',
			apiMessage: '会话不存在',
			charge: 'not_charged',
			code: 'session_not_found',
			httpStatus: 404,
			requestId: 'req_1',
		});
		expect(text).toBe(
			'Image generation failed: The session does not exist or belongs to another account. Error code: session_not_found, HTTP 404. The service refused or refunded the request: no credits were charged. Request id: req_1. The service’s message: 会话不存在. Call again without a session id, or with the session_id returned by an earlier successful call.',
		);
	});

	it('an uncertain outcome says it may have been charged', () => {
		expect(
			toolErrorText({
				...base,
				reason: 'Timed out',
				code: 'timeout',
				charge: 'may_have_been_charged',
			}),
		).toMatch(/may have been charged: do not call again automatically/);
	});

	it('reads never speak of charges', () => {
		expect(
			toolErrorText({
				...base,
				operation: 'getMany',
				reason: 'x',
				code: 'internal_error',
				httpStatus: 500,
			}),
		).toMatch(
			/^Listing publications failed: x\. Error code: internal_error, HTTP 500\. This operation never costs credits\./,
		);
	});
});
