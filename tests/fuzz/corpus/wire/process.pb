b
h"redis€€@