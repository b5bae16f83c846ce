import { assertJava, JavaRuntimeError } from '../../../shared/local/dynamo';

describe('assertJava', () => {
  it('explains how to install Java 17 when java does not run', () => {
    // Act
    const attempt = () => assertJava('definitely-not-a-java-binary');
    // Assess
    expect(attempt).toThrow(JavaRuntimeError);
    expect(attempt).toThrow(/Java 17 or newer/);
    expect(attempt).toThrow(/sudo apt-get install -y openjdk-17-jre-headless/);
    expect(attempt).toThrow(/brew install openjdk@17/);
  });
});
