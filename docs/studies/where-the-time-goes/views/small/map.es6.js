// dragnet: language=javascript
function (doc) { emit(doc._id, doc.type); }
