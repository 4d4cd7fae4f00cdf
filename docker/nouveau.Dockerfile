# A Java runtime for the Nouveau server (dragnet.couchdb.nouveau_docker): the server itself is bound in
# from the unpacked tarball, so one image serves every Nouveau version that runs on this Java.
ARG BASE=debian:trixie-slim
FROM ${BASE}
ARG JRE=openjdk-21-jre-headless
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${JRE} \
 && rm -rf /var/lib/apt/lists/* \
 && java -version
LABEL org.dragnet.image=nouveau-jre
