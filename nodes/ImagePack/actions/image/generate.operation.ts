/** Image → Generate: its parameters and its run, in generate/. */
export { description } from './generate/description';
export { execute } from './generate/execute';
