/**
 * builderHint, read by n8n's AI builders (the node catalog of Instance AI and the MCP builder tools):
 * where it is, that it has the shape of n8n-workflow's IBuilderHint / IParameterBuilderHint, and that
 * no hint leaks wire format. The lint rule no-builder-hint-leakage checks the literals written inside
 * `builderHint: {…}`; this checks the descriptions as n8n loads them, whatever built the text.
 */
import type { IBuilderHint, INodeTypeDescription, IParameterBuilderHint } from 'n8n-workflow';

import { ImagePack } from '../../nodes/ImagePack/ImagePack.node';
import { ImagePackTrigger } from '../../nodes/ImagePack/ImagePackTrigger.node';

// The lint rule's patterns (@n8n/eslint-plugin-community-nodes, no-builder-hint-leakage).
const WIRE_EXPRESSION = /={{/;
const CONNECTION_NAME =
	/\bai_(agent|chain|document|embedding|languageModel|memory|outputParser|retriever|reranker|textSplitter|tool|vectorStore)\b/;

const NODE_HINT_KEYS = ['inputs', 'outputs', 'searchHint', 'relatedNodes', 'extraTypeDefContent'];
const PARAMETER_HINT_KEYS = ['propertyHint', 'placeholderSupported'];

interface Found {
	path: string;
	hint: IParameterBuilderHint;
}

/** Every parameter hint in a property list (options and collections included), with its path. */
function parameterHints(properties: unknown[], prefix = ''): Found[] {
	const found: Found[] = [];
	for (const property of properties as Array<Record<string, unknown>>) {
		const path = `${prefix}${String(property.name ?? property.value)}`;
		if (property.builderHint)
			found.push({ path, hint: property.builderHint as IParameterBuilderHint });
		for (const key of ['options', 'values']) {
			const children = property[key];
			if (Array.isArray(children) && typeof children[0] === 'object') {
				found.push(...parameterHints(children, `${path}.`));
			}
		}
	}
	return found;
}

function strings(value: unknown): string[] {
	if (typeof value === 'string') return [value];
	if (Array.isArray(value)) return value.flatMap(strings);
	if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
	return [];
}

const action = new ImagePack().description;
const trigger = new ImagePackTrigger().description;
const toolVariant = (action.usableAsTool as { replacements: Partial<INodeTypeDescription> })
	.replacements;

const nodeHints: Array<[string, IBuilderHint]> = [
	['imagePack', action.builderHint!],
	['imagePackTool', toolVariant.builderHint!],
	['imagePackTrigger', trigger.builderHint!],
];

describe('builderHint', () => {
	it('both nodes and the tool variant have a node hint with a search hint and related nodes', () => {
		for (const [, hint] of nodeHints) {
			expect(hint).toBeDefined();
			expect(Object.keys(hint).every((key) => NODE_HINT_KEYS.includes(key))).toBe(true);
			expect(hint.searchHint!.length).toBeGreaterThan(100);
			for (const related of hint.relatedNodes ?? []) {
				expect(related.nodeType).toMatch(
					/^(n8n-nodes-imagepack|n8n-nodes-base|@n8n\/n8n-nodes-langchain)\.\w+$/,
				);
				expect(related.relationHint.length).toBeGreaterThan(10);
			}
			expect(hint.relatedNodes?.length).toBeGreaterThan(0);
		}
	});

	it('say how the nodes are wired: refine with ids and session, trigger → get → download, the tool in a chat', () => {
		expect(action.builderHint!.searchHint).toMatch(
			/images\[\]\.id as Reference Image IDs and its session_id as Session ID/,
		);
		expect(trigger.builderHint!.searchHint).toMatch(
			/publication get with the item's id.*file download/,
		);
		const tool = toolVariant.builderHint!;
		expect(tool.searchHint).toMatch(/fromAi\(\)/);
		expect(tool.searchHint).toMatch(/Markdown/);
		expect(tool.relatedNodes!.map((related) => related.nodeType)).toEqual([
			'@n8n/n8n-nodes-langchain.agent',
			'@n8n/n8n-nodes-langchain.memoryBufferWindow',
			'@n8n/n8n-nodes-langchain.chatTrigger',
		]);
	});

	it('the parameters where wiring matters have one', () => {
		const paths = (properties: unknown[]) => parameterHints(properties).map((found) => found.path);
		expect(paths(action.properties)).toEqual(
			expect.arrayContaining([
				'prompt',
				'ratio',
				'referenceImageIds',
				'sessionId',
				'options.imageLinks',
				'publicationId',
				'fileUrl',
			]),
		);
		expect(paths(trigger.properties)).toEqual(['includeManifest']);
		const byPath = new Map(parameterHints(action.properties).map((f) => [f.path, f.hint]));
		expect(byPath.get('referenceImageIds')!.propertyHint).toMatch(/fromAi\('referenceImageIds'/);
		expect(byPath.get('sessionId')!.propertyHint).toMatch(/fromAi\('sessionId'/);
		expect(byPath.get('sessionId')!.propertyHint).toMatch(/expr\('\{\{ \$json\.session_id \}\}'\)/);
	});

	it('parameter hints have the shape of IParameterBuilderHint', () => {
		for (const { path, hint } of [
			...parameterHints(action.properties),
			...parameterHints(trigger.properties),
		]) {
			expect(Object.keys(hint).every((key) => PARAMETER_HINT_KEYS.includes(key))).toBe(true);
			expect(typeof hint.propertyHint).toBe('string');
			expect([path, hint.propertyHint.length > 20]).toEqual([path, true]);
		}
	});

	it('no hint carries wire-format expressions or connection-type names (the lint rule, on what n8n loads)', () => {
		const texts = [
			...nodeHints.flatMap(([, hint]) => strings(hint)),
			...parameterHints(action.properties).flatMap((found) => strings(found.hint)),
			...parameterHints(trigger.properties).flatMap((found) => strings(found.hint)),
		];
		expect(texts.length).toBeGreaterThan(20);
		for (const text of texts) {
			expect(text).not.toMatch(WIRE_EXPRESSION);
			// A related node type is structured data, not prose; the rule allows exact names only.
			expect(text).not.toMatch(CONNECTION_NAME);
		}
	});
});
