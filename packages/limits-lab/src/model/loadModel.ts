import { readFile } from 'node:fs/promises';
import { type Model, parseModel } from './Model.js';

/**
 * Reads a model from a JSON file and checks it ({@link parseModel}).
 * @throws Error naming the file when it cannot be read or is not JSON; the errors of
 *   {@link parseModel} (prefixed by the file's name) for a bad field.
 */
export async function loadModel(path: string): Promise<Model> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(`limits-lab: cannot read the model file ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new SyntaxError(
      `limits-lab: the model file ${path} is not JSON: ${(error as Error).message}`,
    );
  }
  try {
    return parseModel(json);
  } catch (error) {
    const e = error as Error;
    e.message = `${path}: ${e.message}`;
    throw e;
  }
}
