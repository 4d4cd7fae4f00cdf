// dragnet: language=javascript
(doc) => {
  emit(doc._id, doc.type);
}
