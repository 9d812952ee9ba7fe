/**
 * Generate's up-front validation (the API's request fields, its validation rules and limits: a
 * prompt of at most 4000 characters, n of 1, 2 or 4, each model's ratios, resolutions and reference
 * limit): every bad input fails before anything is sent, naming the parameter and the allowed values;
 * the body carries only what the user set (quality only for GPT models).
 */
import {
	type GenerateParameters,
	parseReferenceImageIds,
	validateGenerate,
} from '../../../../nodes/ImagePack/actions/image/generate/request';
import { ValidationIssue } from '../../../../nodes/ImagePack/shared/parameters';
import { issueOf } from '../../issue';

const base: GenerateParameters = {
	prompt: 'a ceramic mug on a wooden table',
	referenceImageIds: '',
	model: 'auto',
	ratio: '3:4',
	resolution: '',
	quality: '',
	n: 1,
	purpose: 'free',
	sessionId: '',
};

const refs = (count: number) => Array.from({ length: count }, (_, i) => `img_${i}`);

const failure = (overrides: Partial<GenerateParameters>) =>
	issueOf(() => validateGenerate({ ...base, ...overrides }));

describe('validateGenerate: the body', () => {
	it('sends only what was set: defaults for model, ratio, n and purpose; no optional fields', () => {
		const { body, creditsEstimated } = validateGenerate(base);
		expect(body).toStrictEqual({
			model: 'auto',
			ratio: '3:4',
			n: 1,
			purpose_id: 'free',
			prompt: 'a ceramic mug on a wooden table',
		});
		expect(Object.keys(body)).not.toEqual(
			expect.arrayContaining(['resolution', 'quality', 'session_id', 'ref_image_ids']),
		);
		// auto at 3:4, default resolutions: nano-banana-2 at 2K (16) is the most expensive candidate.
		expect(creditsEstimated).toBe(16);
	});

	it('treats an empty model as auto and an empty purpose as free', () => {
		const { body } = validateGenerate({ ...base, model: '', purpose: '' });
		expect(body.model).toBe('auto');
		expect(body.purpose_id).toBe('free');
	});

	it('trims the prompt and the session id', () => {
		const { body } = validateGenerate({ ...base, prompt: '  a mug \n', sessionId: ' s_abc123 ' });
		expect(body.prompt).toBe('a mug');
		expect(body.session_id).toBe('s_abc123');
	});

	it('accepts references without a prompt, and both together', () => {
		const onlyRefs = validateGenerate({
			...base,
			prompt: '',
			referenceImageIds: 'img_a, img_b',
		}).body;
		expect(onlyRefs).toStrictEqual({
			model: 'auto',
			ratio: '3:4',
			n: 1,
			purpose_id: 'free',
			ref_image_ids: ['img_a', 'img_b'],
		});
		const both = validateGenerate({ ...base, referenceImageIds: ['img_a'] }).body;
		expect(both.prompt).toBe(base.prompt);
		expect(both.ref_image_ids).toEqual(['img_a']);
	});

	it('sends every field that was set', () => {
		const { body, creditsEstimated } = validateGenerate({
			prompt: 'slogan "Fresh"',
			referenceImageIds: 'img_1 img_2 img_3',
			model: 'gpt-image-2',
			ratio: '16:9',
			resolution: '4K',
			quality: 'high',
			n: 2,
			purpose: 'main_white',
			sessionId: 's_9',
		});
		expect(body).toStrictEqual({
			prompt: 'slogan "Fresh"',
			ref_image_ids: ['img_1', 'img_2', 'img_3'],
			model: 'gpt-image-2',
			ratio: '16:9',
			resolution: '4K',
			quality: 'high',
			n: 2,
			purpose_id: 'main_white',
			session_id: 's_9',
		});
		expect(creditsEstimated).toBe(106);
	});

	it.each(['free', 'main_white', 'detail', 'buyer_show', 'pure_white'])(
		'passes purpose %s as purpose_id',
		(purpose) => {
			expect(validateGenerate({ ...base, purpose }).body.purpose_id).toBe(purpose);
		},
	);

	it.each([
		[1, 1],
		[2, 2],
		[4, 4],
		['1', 1],
		['2', 2],
		['4', 4],
		[' 4 ', 4],
	])('accepts n = %p as the number %p', (n, expected) => {
		const { body } = validateGenerate({ ...base, model: 'nano-banana-2', n });
		expect(body.n).toBe(expected);
		expect(typeof body.n).toBe('number');
	});

	it('sends the resolution only when one was chosen; the estimate uses the model default otherwise', () => {
		const omitted = validateGenerate({ ...base, model: 'nano-banana-2' });
		expect('resolution' in omitted.body).toBe(false);
		expect(omitted.creditsEstimated).toBe(16);
		const chosen = validateGenerate({ ...base, model: 'nano-banana-2', resolution: '1K' });
		expect(chosen.body.resolution).toBe('1K');
		expect(chosen.creditsEstimated).toBe(12);
	});
});

describe('validateGenerate: quality only for GPT models', () => {
	it.each(['gpt-image-2', 'gpt-image-2.5'])(
		'%s gets the chosen quality, priced accordingly',
		(model) => {
			for (const [quality, credits] of [
				['low', 5],
				['medium', 15],
				['high', 50],
			] as const) {
				const { body, creditsEstimated } = validateGenerate({ ...base, model, quality });
				expect(body.quality).toBe(quality);
				expect(creditsEstimated).toBe(credits);
			}
		},
	);

	it.each(['gpt-image-2', 'gpt-image-2.5'])(
		'%s without quality sends none and is estimated as medium',
		(model) => {
			for (const quality of ['', undefined]) {
				const { body, creditsEstimated } = validateGenerate({ ...base, model, quality });
				expect('quality' in body).toBe(false);
				expect(creditsEstimated).toBe(15);
			}
		},
	);

	it.each(['nano-banana-2', 'seedream-5-0-pro', 'qwen-image-3.0-pro', 'auto'])(
		'%s never receives quality, whatever the parameter holds',
		(model) => {
			for (const quality of ['low', 'medium', 'high', 'ultra', '']) {
				expect('quality' in validateGenerate({ ...base, model, quality }).body).toBe(false);
			}
		},
	);

	it('rejects an unknown quality on a GPT model, listing the allowed values', () => {
		const issue = failure({ model: 'gpt-image-2', quality: 'ultra' });
		expect(issue.parameter).toBe('quality');
		expect(issue.message).toMatch(/Quality "ultra"/);
		expect(issue.message).toContain('gpt-image-2');
		expect(issue.message).toContain('Allowed values: low, medium, high');
	});
});

describe('validateGenerate: every bad input is refused before sending', () => {
	it.each([
		['empty prompt, empty references', { prompt: '', referenceImageIds: '' }],
		['blank prompt, empty references', { prompt: '   \n\t', referenceImageIds: '' }],
		['no prompt, empty array', { prompt: '', referenceImageIds: [] }],
		['no prompt, only separators', { prompt: '', referenceImageIds: ' , ; ' }],
		['no prompt, null references', { prompt: '', referenceImageIds: null }],
		['no prompt, empty JSON array', { prompt: '', referenceImageIds: '[]' }],
	])('no prompt and no references (%s)', (_label, overrides) => {
		const issue = failure(overrides);
		expect(issue).toBeInstanceOf(ValidationIssue);
		expect(issue).toBeInstanceOf(Error);
		expect(issue.parameter).toBe('prompt');
		expect(issue.message).toContain('Prompt');
		expect(issue.message).toContain('Reference Image IDs');
	});

	it('accepts a prompt of exactly 4000 characters and rejects 4001', () => {
		expect(validateGenerate({ ...base, prompt: 'a'.repeat(4000) }).body.prompt).toHaveLength(4000);
		const issue = failure({ prompt: 'a'.repeat(4001) });
		expect(issue.parameter).toBe('prompt');
		expect(issue.message).toContain('Prompt');
		expect(issue.message).toContain('4001');
		expect(issue.message).toContain('4000');
	});

	it('counts characters, not UTF-16 code units: 4000 emoji or CJK characters are allowed', () => {
		expect(() => validateGenerate({ ...base, prompt: '😀'.repeat(4000) })).not.toThrow();
		expect(() => validateGenerate({ ...base, prompt: '杯'.repeat(4000) })).not.toThrow();
		const issue = failure({ prompt: '😀'.repeat(4001) });
		expect(issue.parameter).toBe('prompt');
		expect(issue.message).toContain('4001');
	});

	it('measures the prompt as sent (trimmed)', () => {
		const { body } = validateGenerate({ ...base, prompt: `  ${'a'.repeat(4000)}  ` });
		expect(body.prompt).toHaveLength(4000);
	});

	it.each(['dall-e-3', 'GPT-IMAGE-2', 'gpt-image', 'nano-banana'])(
		'rejects the unknown model %p, listing the models',
		(model) => {
			const issue = failure({ model });
			expect(issue.parameter).toBe('model');
			expect(issue.message).toContain(`Model "${model}"`);
			expect(issue.message).toContain(
				'Allowed values: auto, nano-banana-2, gpt-image-2, gpt-image-2.5, seedream-5-0-pro, qwen-image-3.0-pro',
			);
		},
	);

	it.each(['seedream-5-0-pro', 'qwen-image-3.0-pro'])(
		'rejects 4:5 on %s, listing its ratios',
		(model) => {
			const issue = failure({ model, ratio: '4:5' });
			expect(issue.parameter).toBe('ratio');
			expect(issue.message).toContain('Ratio "4:5"');
			expect(issue.message).toContain(model);
			expect(issue.message).toContain('Allowed values: 1:1, 3:4, 16:9, 9:16');
		},
	);

	it.each(['2:3', '', '3/4', '34'])(
		'rejects the ratio %p for every model, listing all ratios',
		(ratio) => {
			const issue = failure({ ratio });
			expect(issue.parameter).toBe('ratio');
			expect(issue.message).toContain('Ratio');
			expect(issue.message).toContain('Allowed values: 1:1, 3:4, 4:5, 16:9, 9:16');
		},
	);

	it.each(['seedream-5-0-pro', 'qwen-image-3.0-pro'])(
		'rejects 4K on %s, listing its resolutions',
		(model) => {
			const issue = failure({ model, resolution: '4K' });
			expect(issue.parameter).toBe('resolution');
			expect(issue.message).toContain('Resolution "4K"');
			expect(issue.message).toContain(model);
			expect(issue.message).toContain('Allowed values: 1K, 2K');
		},
	);

	it.each(['8K', '2k', '1080p'])(
		'rejects the resolution %p, listing the resolutions',
		(resolution) => {
			for (const model of ['auto', 'nano-banana-2', 'gpt-image-2']) {
				const issue = failure({ model, resolution });
				expect(issue.parameter).toBe('resolution');
				expect(issue.message).toContain(`Resolution "${resolution}"`);
				expect(issue.message).toContain('Allowed values: 1K, 2K, 4K');
			}
		},
	);

	it.each([
		['nano-banana-2', 14],
		['gpt-image-2', 16],
		['gpt-image-2.5', 16],
		['seedream-5-0-pro', 10],
		['qwen-image-3.0-pro', 3],
	])('%s: accepts %i references and rejects one more', (model, limit) => {
		expect(
			validateGenerate({ ...base, model, referenceImageIds: refs(limit) }).body.ref_image_ids,
		).toHaveLength(limit);
		const issue = failure({ model, referenceImageIds: refs(limit + 1) });
		expect(issue.parameter).toBe('referenceImageIds');
		expect(issue.message).toContain(`${limit + 1} reference images`);
		expect(issue.message).toContain(model);
		expect(issue.message).toContain(`at most ${limit}`);
	});

	it('auto accepts up to 16 references (routing to a model that fits) and rejects 17', () => {
		const { body, creditsEstimated } = validateGenerate({ ...base, referenceImageIds: refs(16) });
		expect(body.ref_image_ids).toHaveLength(16);
		// Only the GPT models take 16: medium 15 + 16 references.
		expect(creditsEstimated).toBe(31);
		const issue = failure({ referenceImageIds: refs(17) });
		expect(issue.parameter).toBe('referenceImageIds');
		expect(issue.message).toContain('17 reference images');
		expect(issue.message).toContain('at most 16');
	});

	it.each([3, '3', 0, '0', 'two', -1, 8, 1.5, '', '1,2', null, undefined, true])(
		'rejects n = %p, listing 1, 2, 4',
		(n) => {
			const issue = failure({ n: n as number });
			expect(issue.parameter).toBe('n');
			expect(issue.message).toContain('Number of images');
			expect(issue.message).toContain('Allowed values: 1, 2, 4');
		},
	);

	it.each(['banner', 'FREE', 'main-white'])(
		'rejects the purpose %p, listing the purposes',
		(purpose) => {
			const issue = failure({ purpose });
			expect(issue.parameter).toBe('purpose');
			expect(issue.message).toContain(`Purpose "${purpose}"`);
			expect(issue.message).toContain(
				'Allowed values: free, main_white, detail, buyer_show, pure_white',
			);
		},
	);
});

describe('validateGenerate: maxCreditsPerItem', () => {
	it('passes when the estimate is at or under the budget', () => {
		// nano-banana-2 at 4K, n = 4: 92 credits.
		const request = { ...base, model: 'nano-banana-2', resolution: '4K', n: 4 };
		expect(validateGenerate({ ...request, maxCreditsPerItem: 92 }).creditsEstimated).toBe(92);
		expect(validateGenerate({ ...request, maxCreditsPerItem: 1000 }).creditsEstimated).toBe(92);
	});

	it('fails over the budget, naming both figures', () => {
		const issue = failure({
			model: 'nano-banana-2',
			resolution: '4K',
			n: 4,
			maxCreditsPerItem: 91,
		});
		expect(issue.parameter).toBe('maxCreditsPerItem');
		expect(issue.message).toContain('92 credits');
		expect(issue.message).toContain('Max Credits per Item (91)');
	});

	it('guards auto with the most expensive model it may pick', () => {
		// auto, 4K, 14 references: GPT medium + 14 = 29 beats nano-banana-2's 23.
		const request = { ...base, resolution: '4K', referenceImageIds: refs(14) };
		expect(validateGenerate({ ...request, maxCreditsPerItem: 29 }).creditsEstimated).toBe(29);
		expect(failure({ ...request, maxCreditsPerItem: 28 }).parameter).toBe('maxCreditsPerItem');
	});

	it('counts the GPT reference surcharge per image', () => {
		const request = {
			...base,
			model: 'gpt-image-2',
			quality: 'high',
			n: 4,
			referenceImageIds: refs(3),
		};
		expect(validateGenerate({ ...request, maxCreditsPerItem: 212 }).creditsEstimated).toBe(212);
		expect(failure({ ...request, maxCreditsPerItem: 211 }).message).toContain('212 credits');
	});

	it.each([0, undefined])('treats %p as no budget', (maxCreditsPerItem) => {
		const request = { ...base, model: 'gpt-image-2', quality: 'high', n: 4, maxCreditsPerItem };
		expect(validateGenerate(request).creditsEstimated).toBe(200);
	});
});

describe('validateGenerate: prompt shape', () => {
	it.each([
		[{ text: 'x' }, /must be text, but the expression gave a object/],
		[['a', 'b'], /must be text, but the expression gave a list/],
		[true, /must be text, but the expression gave a boolean/],
		['\u0000\u0000\u0000', /control character U\+0000/],
		['a shoe\u0007', /control character U\+0007/],
	])('refuses %p', (prompt, message) => {
		const issue = failure({ prompt });
		expect(issue.parameter).toBe('prompt');
		expect(issue.message).toMatch(message);
	});

	it('keeps tabs and line breaks, and numbers from expressions', () => {
		expect(validateGenerate({ ...base, prompt: 'a\tb\nc' }).body.prompt).toBe('a\tb\nc');
		expect(validateGenerate({ ...base, prompt: 42 }).body.prompt).toBe('42');
	});

	it('a reference list nested 20,000 deep is a clear error, not a stack overflow', () => {
		let nested: unknown = 'img_1';
		for (let depth = 0; depth < 20_000; depth++) nested = [nested];
		const issue = failure({ referenceImageIds: nested });
		expect(issue.parameter).toBe('referenceImageIds');
		expect(issue.message).toMatch(/nested more than 8 levels deep/);
	});
});

describe('validateGenerate: sessionId', () => {
	it.each(['s_abc', 's_0123456789abcdef', 's_a-b_c'])('accepts %p', (sessionId) => {
		expect(validateGenerate({ ...base, sessionId }).body.session_id).toBe(sessionId);
	});

	it.each([
		'abc',
		't_123',
		's_',
		'S_abc',
		's_ab c',
		's_abc/def',
		'https://example.com/s_abc',
		'img_123',
	])('rejects %p as not a session id', (sessionId) => {
		const issue = failure({ sessionId });
		expect(issue.parameter).toBe('sessionId');
		expect(issue.message).toContain(`"${sessionId}"`);
		expect(issue.message).toContain('s_');
	});

	it('leaves session_id out when empty or blank', () => {
		for (const sessionId of ['', '   ']) {
			expect('session_id' in validateGenerate({ ...base, sessionId }).body).toBe(false);
		}
	});
});

describe('validateGenerate: robustness against expression results', () => {
	it('accepts a prompt or session id that an expression returned as a number', () => {
		const { body } = validateGenerate({
			...base,
			prompt: 12345 as unknown as string,
			sessionId: undefined as unknown as string,
		});
		expect(body.prompt).toBe('12345');
	});

	it('rejects malformed reference ids before anything else', () => {
		const issue = failure({ prompt: '', referenceImageIds: 'photo.jpg' });
		expect(issue.parameter).toBe('referenceImageIds');
	});
});

describe('parseReferenceImageIds', () => {
	it.each([
		['empty string', ''],
		['null', null],
		['undefined', undefined],
		['empty array', []],
		['nested empty arrays', [[], [[]]]],
		['blank string', '   '],
		['empty JSON array string', '[]'],
		['array of blanks', ['', null, undefined]],
	])('reads nothing from %s', (_label, value) => {
		expect(parseReferenceImageIds(value)).toEqual([]);
	});

	it.each([
		['comma separated', 'img_1,img_2,img_3'],
		['comma and space', 'img_1, img_2, img_3'],
		['spaces', 'img_1 img_2   img_3'],
		['semicolons', 'img_1;img_2; img_3'],
		['new lines and tabs', 'img_1\nimg_2\r\n\timg_3'],
		['leading and trailing separators', ' ,img_1,,img_2 ; img_3, '],
		['JSON array string', '["img_1","img_2","img_3"]'],
		['JSON array string with spaces', '  [ "img_1", "img_2", "img_3" ]  '],
		['JSON array of objects', '[{"id":"img_1"},{"id":"img_2"},{"id":"img_3"}]'],
		['array', ['img_1', 'img_2', 'img_3']],
		['array with padded ids', [' img_1 ', 'img_2\n', 'img_3']],
		['array of comma strings', ['img_1, img_2', 'img_3']],
		['nested arrays', [['img_1'], [['img_2'], 'img_3']]],
		['array with empty entries', ['img_1', '', null, 'img_2', undefined, 'img_3']],
		[
			'the images array of an earlier Generate',
			[
				{ id: 'img_1', filename: 'a.png', url: '/api/file/a.png', width: 768, height: 1024 },
				{ id: 'img_2', filename: 'b.png', url: '/api/file/b.png', width: 768, height: 1024 },
				{ id: 'img_3', filename: 'c.png', url: '/api/file/c.png', width: 768, height: 1024 },
			],
		],
		[
			'nested images arrays (several items)',
			[[{ id: 'img_1' }, { id: 'img_2' }], [{ id: 'img_3' }]],
		],
		[
			'manifest items with imageId',
			[{ imageId: 'img_1', download_url: '/api/file/a.png' }, { imageId: 'img_2' }, 'img_3'],
		],
		['a single object', [{ id: 'img_1' }, { id: ['img_2', 'img_3'] }]],
	])('reads img_1, img_2, img_3 from %s', (_label, value) => {
		expect(parseReferenceImageIds(value)).toEqual(['img_1', 'img_2', 'img_3']);
	});

	it('keeps the order and duplicates as given', () => {
		expect(parseReferenceImageIds('img_b img_a img_b')).toEqual(['img_b', 'img_a', 'img_b']);
		expect(parseReferenceImageIds({ id: 'img_x' })).toEqual(['img_x']);
		expect(parseReferenceImageIds('img_A-9_z')).toEqual(['img_A-9_z']);
	});

	it.each([
		[
			'a full file URL',
			'https://example.com/api/file/abc.png',
			'https://example.com/api/file/abc.png',
		],
		['an API file path', '/api/file/abc.png', '/api/file/abc.png'],
		['a file name', 'abc.png', 'abc.png'],
		['a file name among ids', 'img_1, photo.jpg', 'photo.jpg'],
		['a file name in an array', ['img_1', 'photo.jpg'], 'photo.jpg'],
		['an upper-case prefix', 'IMG_1', 'IMG_1'],
		['the bare prefix', 'img_', 'img_'],
		['a turn id', 't_abc', 't_abc'],
		['a number', 42, '42'],
		['a numeric id field', { id: 7 }, '7'],
		['a quoted id', '"img_1"', '"img_1"'],
		['broken JSON', '[img_1', '[img_1'],
	])('rejects %s with a clear message', (_label, value, shown) => {
		const issue = issueOf(() => parseReferenceImageIds(value));
		expect(issue.parameter).toBe('referenceImageIds');
		expect(issue.message).toContain(`"${shown}" is not an image id`);
		expect(issue.message).toContain('img_');
	});

	it('rejects objects without an id, saying what is expected', () => {
		for (const value of [{ filename: 'a.png' }, [{ url: '/api/file/a.png' }], {}]) {
			const issue = issueOf(() => parseReferenceImageIds(value));
			expect(issue.parameter).toBe('referenceImageIds');
			expect(issue.message).toContain('img_');
			expect(issue.message).toContain('"id"');
		}
	});
});
